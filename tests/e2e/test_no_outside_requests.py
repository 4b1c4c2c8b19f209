"""Real browser: no page of the dashboard asks anything of a server other than its own, so an offline deployment, or
one behind a strict Content-Security-Policy, draws every page whole. Every request each page makes is recorded (the
document, scripts, styles, fonts, images, the tab icon, the websocket) and each must go to the dashboard's own host,
or be a blob: or data: URL the page made itself. (Streamlit fetches a `:material/…:` tab icon from fonts.gstatic.com:
the router's icon is our own file, app/static/favicon.svg.)"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from playwright.sync_api import Page, expect

from tests.e2e.conftest import wait_for_app
from tests.support.router import router_pages

_OWN_SCHEMES = ("blob", "data")
ICON = re.compile(r"^data:image/svg\+xml;base64,")


def test_no_page_requests_anything_from_outside_the_local_host(page: Page, app_url):
    own_host = urlsplit(app_url).hostname
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    outside: dict[str, list[str]] = {}
    for _file, title, _icon, url_path in router_pages():
        requested.clear()
        page.goto(f"{app_url}/{url_path}")
        wait_for_app(page)
        expect(page.locator("[data-testid='stSidebarNav']").get_by_text(title, exact=True)).to_be_visible()
        wait_for_app(page)
        expect(page.locator("[data-testid='stSkeleton']")).to_have_count(0)
        # the tab icon is the router's own, inline (set once the app has drawn: then its request would have been made)
        expect(page.locator("link[rel='shortcut icon']")).to_have_attribute("href", ICON)
        off = [u for u in requested if urlsplit(u).scheme not in _OWN_SCHEMES and urlsplit(u).hostname != own_host]
        if off:
            outside[url_path] = sorted(set(off))
    assert outside == {}, outside
