"""Real Chromium: the browser RTT probe measures targets that send no CORS and no Timing-Allow-Origin headers.

Cloud region endpoints rarely send either. The page (served by one local target server) runs the
product's own browser_rtt.js unchanged; the targets live on another origin (another port), so
every fetch is cross-origin: the probe falls back to no-cors, follows redirects (redirect "manual"
is forbidden there, and used to turn every such target into "blocked"), and labels the sample as
the fallback. The redirecting one must be measured (a figure, not "blocked"). The plain target's
best figure must stay near the server-side probe's: within GROSS_MS, which catches a method that
waits on a timeout, a preflight or a second fetch, and not the browser's timer latency on a loaded
machine. The accuracy target itself (within 10 ms on loopback, quiet) is a benchmark figure: a clean-clone CI run
at load ~3 read 11.7 ms against the server's 1.4 with this same code.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page

from planner.probes.rtt import probe_rtt_target
from tests.support.rtt_target import serve_in_thread

N = 8
GROSS_MS = 30.0  # see the module docstring


@pytest.fixture(scope="module")
def servers():
    page_server, target_server = serve_in_thread(), serve_in_thread()
    yield page_server, target_server
    page_server.stop()
    target_server.stop()


def _measure(page: Page, page_server, urls: dict[str, str]) -> list[dict]:
    page.goto(f"{page_server.base_url}/page")
    page.wait_for_function("window.ready === true")
    targets = [{"region_id": k, "url": v} for k, v in urls.items()]
    return page.evaluate("([targets, n]) => window.measureTargets(targets, n, 5000)", [targets, N])


def _server_ttfb_ms(url: str) -> float:
    """The server-side probe's HTTP round trip to `url` (best of several; the redirect itself is not followed)."""
    results = [probe_rtt_target(url, n=1) for _ in range(N)]
    assert all(r.error_class is None for r in results), results[0].error_detail
    return min(r.ttfb_ms for r in results)


def test_targets_without_cors_or_tao_are_measured_and_labelled_as_the_fallback(page: Page, servers):
    page_server, target = servers
    assert page_server.port != target.port  # cross-origin: no CORS header means an opaque response
    urls = {"no-cors": f"{target.base_url}/ping-no-cors", "redirect": f"{target.base_url}/redirect-no-cors"}
    samples = _measure(page, page_server, urls)
    server_ms = _server_ttfb_ms(urls["no-cors"])
    for region in urls:
        mine = [s for s in samples if s["region_id"] == region]
        assert [s["error_class"] for s in mine] == [None] * N, mine[:1]  # measured, not "blocked"
        assert {s["method"] for s in mine} == {"fetch-performance-now"}  # labelled as the fallback
        assert all("fallback" in s["error_detail"] for s in mine), mine[0]["error_detail"]
        assert all(0 < s["rtt_ms"] < 1000 for s in mine), mine
    # best of N on both sides, as the server probe reads a path RTT (this suite runs on loaded machines);
    # the redirect's figure holds two round trips and the browser's redirect hops, so it is not compared
    browser_ms = min(s["rtt_ms"] for s in samples if s["region_id"] == "no-cors")
    assert abs(browser_ms - server_ms) < GROSS_MS, (browser_ms, server_ms, samples)
