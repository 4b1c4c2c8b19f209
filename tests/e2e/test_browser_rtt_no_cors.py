"""Real Chromium: the browser RTT probe measures targets that send no CORS and no Timing-Allow-Origin headers.

Cloud region endpoints rarely send either. The page (served by one local target server) runs the
product's own browser_rtt.js unchanged; the targets live on another origin (another port), so
every fetch is cross-origin: the probe falls back to no-cors, follows redirects (redirect "manual"
is forbidden there, and used to turn every such target into "blocked"), and labels the sample as
the fallback. The redirecting one must be measured (a figure, not "blocked"). Each kept sample is one
fetch: the target sees one request per sample (two behind the redirect), never a second fetch of the same
sample, and none of them waited for the probe's timeout. How close the fallback's figure comes to the true
round trip (within 10 ms on loopback, quiet) is a benchmark figure: bench/bench_rtt_accuracy.py prints it.
"""

from __future__ import annotations

from collections import Counter
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import Page

from tests.support.rtt_target import serve_in_thread

N = 8


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


def test_targets_without_cors_or_tao_are_measured_and_labelled_as_the_fallback(page: Page, servers):
    page_server, target = servers
    assert page_server.port != target.port  # cross-origin: no CORS header means an opaque response
    urls = {"no-cors": f"{target.base_url}/ping-no-cors", "redirect": f"{target.base_url}/redirect-no-cors"}
    sent: list[str] = []  # every request the page made to the target, as the browser sent it
    page.on("request", lambda r: sent.append(r.url) if r.url.startswith(target.base_url) else None)
    samples = _measure(page, page_server, urls)
    for region in urls:
        mine = [s for s in samples if s["region_id"] == region]
        assert [s["error_class"] for s in mine] == [None] * N, mine[:1]  # measured, not "blocked" nor timed out
        assert {s["method"] for s in mine} == {"fetch-performance-now"}  # labelled as the fallback
        assert all("fallback" in s["error_detail"] for s in mine), mine[0]["error_detail"]
        assert all(s["rtt_ms"] > 0 for s in mine), mine
    # One fetch per sample, each tagged with its own nonce: per target, the CORS attempt that found no CORS headers,
    # the dropped first no-cors fetch (it pays the connection) and the N kept ones; each tag requested once per hop.
    hops = Counter((urlparse(u).path, parse_qs(urlparse(u).query)["ttft_rtt"][0]) for u in sent)
    assert set(hops.values()) == {1}, hops  # no fetch repeated
    plain = {tag for path, tag in hops if path == "/ping-no-cors"}
    via_redirect = {tag for path, tag in hops if path == "/redirect-no-cors"}
    followed = plain & via_redirect  # the redirect's no-cors fetches, followed to /ping-no-cors
    assert len(followed) == N + 1, hops
    assert len(plain - followed) == N + 2, hops
    assert len(via_redirect - followed) == 1, hops  # its CORS attempt: a redirect without CORS headers stops it
