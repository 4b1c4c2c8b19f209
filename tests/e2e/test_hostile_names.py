"""Real browser: an error body or an endpoint name carrying Markdown/HTML is shown as text and never fetched.

An "attacker" HTTP server on loopback counts requests; endpoints are named with image links to it and their
worker status carries a 401 body with one. Opening the Endpoints, Probes and Compare pages must not make the
browser request anything from it, and the text must be visible as typed.
"""

from __future__ import annotations

import http.server
import threading
import time

import pytest
import sqlalchemy as sa
from playwright.sync_api import Page, expect

from planner.store import open_store, session
from planner.store.worker import EndpointStatusRow
from tests.e2e.conftest import StreamlitServer, wait_for_app
from tests.support.compare_seed import seed_endpoint


class _Counter(http.server.BaseHTTPRequestHandler):
    disable_nagle_algorithm = True  # TCP_NODELAY, like every local test server
    hits: list[str] = []

    def do_GET(self):  # noqa: N802
        type(self).hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def attacker():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counter)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="module")
def hostile_url(attacker, tmp_path_factory):
    data = tmp_path_factory.mktemp("e2e-hostile")
    eng = open_store(f"sqlite:///{data / 'planner.db'}")
    image = f"![status]({attacker}/beacon.png)"
    for i, name in enumerate([f"img {image}", "<img src=x onerror=alert(1)>"]):
        seed_endpoint(eng, name, median_ms=300 + 100 * i, n=40, seed=i + 1)
    with session(eng) as s:
        for eid in s.exec(sa.text("SELECT id FROM endpoint")).scalars():
            for vantage in ("", "office"):
                s.add(
                    EndpointStatusRow(
                        endpoint_id=eid,
                        vantage=vantage,
                        state="failing",
                        consecutive_failures=5,
                        detail=f"HTTP 401 from https://api.example.com/v1: {image} <script>alert(1)</script>",
                        updated_at_ms=int(time.time() * 1000),
                    )
                )
    eng.dispose()
    server = StreamlitServer(data)
    yield server.url
    server.stop()


@pytest.mark.parametrize("url_path", ["endpoints", "probes", "compare"])
def test_outside_markup_is_text_and_never_fetched(page: Page, hostile_url, attacker, url_path):
    _Counter.hits.clear()
    page.goto(f"{hostile_url}/{url_path}")
    wait_for_app(page)
    expect(page.locator("[data-testid='stSkeleton']")).to_have_count(0)
    assert page.locator("[data-testid='stException']").count() == 0
    page.wait_for_timeout(1000)
    imgs = page.locator(f"img[src^='{attacker}']")
    assert imgs.count() == 0, [
        imgs.nth(i).evaluate(
            "e => { let p = e; for (let k = 0; k < 6 && p.parentElement; k++) p = p.parentElement;"
            " return p.outerHTML.slice(0, 600)"
            " + ' TESTID ' + (e.closest('[data-testid]') || {}).outerHTML?.slice(0, 80) + "
            "(e.closest('[data-testid]')||{getAttribute:()=>''}).getAttribute('data-testid') }"
        )
        for i in range(imgs.count())
    ]
    assert page.locator("script:has-text('alert(1)')").count() == 0
    if url_path != "compare":
        expect(page.locator("[data-testid='stAlert']").filter(has_text="![status](").first).to_be_visible()
    assert _Counter.hits == [], _Counter.hits
