"""Real browser: every page of the router opens by its deep link, asks nothing of any server but its own, and outside
markup on it stays text.

What AppTest cannot show (tests/app/test_page_sweep.py renders every page × store state there): the URL routes to
the page, the sidebar nav names it, no skeleton is left once the run ends, and Chromium draws it (a screenshot per
page). The walk runs on the shared server, whose store holds endpoints named with an image link to a loopback
"attacker" server and an HTML tag, failing with a 401 body that carries both (tests/e2e/conftest.py): on every page
the browser must request nothing from that server and the DOM holds no such image or script — the part of the
hostile-names scenario only a browser shows (tests/app/test_hostile_and_faults.py checks the escaping itself, on
more names and on the exports). One browser page walks them all; each page's failures are collected and named.

No page asks anything of a server other than its own, so an offline deployment, or one behind a strict
Content-Security-Policy, draws every page whole: every request each page makes is recorded (the document, scripts,
styles, fonts, images, the tab icon, the websocket) and each must go to the dashboard's own host, or be a blob: or
data: URL the page made itself. (Streamlit fetches a `:material/…:` tab icon from fonts.gstatic.com: the router's icon
is our own file, app/static/favicon.svg, inline.)
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page, expect

from tests.e2e.conftest import wait_for_app
from tests.support.router import router_pages

# Pages that show the failing endpoints' worker status (the 401 body) in an alert box.
STATUS_PAGES = ("endpoints", "probes")
_OWN_SCHEMES = ("blob", "data")
ICON = re.compile(r"^data:image/svg\+xml;base64,")


def _check_page(page: Page, app_url: str, attacker_url: str, title: str, url_path: str, shot) -> None:
    page.goto(f"{app_url}/{url_path}")
    wait_for_app(page)
    expect(page.locator("[data-testid='stSidebarNav']").get_by_text(title, exact=True)).to_be_visible()
    wait_for_app(page)
    expect(page.locator("[data-testid='stSkeleton']")).to_have_count(0)
    assert page.locator("[data-testid='stException']").count() == 0, "shows an exception"
    expect(page.locator("h1").first).to_be_visible()
    assert page.get_by_text("Page not found").count() == 0, "Streamlit's 'Page not found' dialog is open"
    images = page.locator(f"img[src^='{attacker_url}']")
    assert images.count() == 0, images.first.evaluate("e => e.parentElement.outerHTML.slice(0, 600)")
    assert page.locator("script:has-text('alert(1)')").count() == 0, "a script from an error body is in the page"
    if url_path in STATUS_PAGES:  # the 401 body is shown as typed
        expect(page.locator("[data-testid='stAlert']").filter(has_text="![status](").first).to_be_visible()
    # the tab icon is the router's own, inline (set once the app has drawn: then its request would have been made)
    expect(page.locator("link[rel='shortcut icon']")).to_have_attribute("href", ICON)
    page.screenshot(path=str(shot), full_page=True)


def _outside(url: str, own_host: str | None) -> bool:
    return urlsplit(url).scheme not in _OWN_SCHEMES and urlsplit(url).hostname != own_host


def test_every_page_opens_by_deep_link_asks_nothing_outside_and_shows_outside_markup_as_text(
    page: Page, app_url, attacker, artifacts_dir
):
    page.set_viewport_size({"width": 1400, "height": 1000})
    own_host = urlsplit(app_url).hostname
    asked: list[str] = []  # what the browser requested from the attacker, as it asked (not when the server saw it)
    outside: list[str] = []  # what it requested from any other host
    page.on("request", lambda r: asked.append(r.url) if r.url.startswith(attacker.url) else None)
    page.on("request", lambda r: outside.append(r.url) if _outside(r.url, own_host) else None)
    attacker.hits.clear()
    failures: list[str] = []
    for _file, title, _icon, url_path in router_pages():
        try:
            _check_page(page, app_url, attacker.url, title, url_path, artifacts_dir / f"page-{url_path}.png")
        except (AssertionError, PlaywrightError) as exc:
            failures.append(f"{url_path} ({title}): {type(exc).__name__}: {str(exc)[:800]}")
        if asked:
            failures.append(f"{url_path} ({title}): the browser requested {asked}")
            asked.clear()
        if outside:
            failures.append(f"{url_path} ({title}): requested from outside the local host: {sorted(set(outside))}")
            outside.clear()
    assert attacker.hits == [], attacker.hits  # nothing reached the attacker's server either
    assert not failures, "\n".join(failures)
