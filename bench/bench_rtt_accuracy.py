"""Benchmark: RTT probe accuracy over links with a known RTT (userspace delay line between two namespaces).

For each link (40 ms and 80 ms round trip) prints, side by side, the error (measured − true RTT) of:
  - the server probe: `ttft-planner rtt` TCP connects (median and min), run inside namespace A;
  - the browser probe: real Chromium inside namespace A, loading a page that runs the product's own
    measurement JS (app/components/browser_rtt.js) against a target in namespace B, cross-origin, with
    Timing-Allow-Origin: Resource Timing responseStart − requestStart;
  - the naive baseline: performance.now() around the same fetch() calls (what gcping-style pages do).
Needs root, network namespaces and /dev/net/tun (exits 0 with the reason otherwise).

    .venv/bin/python bench/bench_rtt_accuracy.py [-n 20]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.browser import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from tests.support.netdelay import ADDR_B, DelayLink  # noqa: E402

TARGET_PORT, PAGE_PORT = 8080, 8090


def _browser_part(page_url: str, target_url: str, n: int) -> None:
    """Runs inside namespace A: Chromium loads the page and measures the target; prints JSON samples."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto(page_url)
        page.wait_for_function("window.ready === true", timeout=30_000)
        samples = page.evaluate(
            "([url, n]) => window.measureTargets([{region_id: 'b', url}], n, 5000)", [target_url, n]
        )
        browser.close()
    print(json.dumps(samples))


def _wait_http(link: DelayLink, url: str) -> None:
    deadline = time.monotonic() + 30
    code = f"import urllib.request; urllib.request.urlopen({url!r}, timeout=2)"
    while link.run_in("a", [sys.executable, "-c", code], capture_output=True).returncode != 0:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{url} did not answer")
        time.sleep(0.3)


def _stats(values: list[float], rtt: float) -> str:
    med = statistics.median(values)
    return f"{med:7.2f} ({med - rtt:+5.2f})"


def _output_in_a(link: DelayLink, argv: list[str], what: str, timeout_s: float) -> str:
    """The standard output of `argv` run in namespace "a"; a RuntimeError naming `what` when it fails."""
    run = link.run_in("a", argv, capture_output=True, text=True, cwd=ROOT, timeout=timeout_s)
    if run.returncode != 0:
        raise RuntimeError(f"{what} failed: {(run.stderr or run.stdout)[-2000:]}")
    return run.stdout


def _browser_samples(link: DelayLink, target: str, n: int, what: str) -> list[dict]:
    """`n` browser RTT samples of `target`, from this script's --browser-part in namespace "a" (the page served
    there); `what` names the probe in the RuntimeError raised when it fails."""
    argv = [sys.executable, __file__, "--browser-part", f"http://127.0.0.1:{PAGE_PORT}/page", target, str(n)]
    return json.loads(_output_in_a(link, argv, what, 180).strip().splitlines()[-1])


def measure(rtt_ms: float, n: int) -> dict:
    cli = str(Path(sys.executable).parent / "ttft-planner")
    with DelayLink(rtt_ms=rtt_ms) as link:
        link.popen_in("b", [sys.executable, "-m", "tests.support.rtt_target", ADDR_B, str(TARGET_PORT)], cwd=ROOT)
        link.popen_in("a", [sys.executable, "-m", "tests.support.rtt_target", "127.0.0.1", str(PAGE_PORT)], cwd=ROOT)
        target = f"http://{ADDR_B}:{TARGET_PORT}/ping"
        _wait_http(link, target)
        _wait_http(link, f"http://127.0.0.1:{PAGE_PORT}/ping")
        argv = [cli, "rtt", "--url", target, "-n", str(n), "--json", "--vantage", "bench"]
        tcp = json.loads(_output_in_a(link, argv, "server probe", 120))["results"][0]["tcp_connect_ms"]
        samples = _browser_samples(link, target, n, "browser probe")
        # a target with no CORS and no Timing-Allow-Origin headers: no-cors fetch, the labelled fallback (issue 14)
        no_cors = _browser_samples(link, f"http://{ADDR_B}:{TARGET_PORT}/ping-no-cors", n, "browser probe (no CORS)")
    ok = [s for s in samples if s["error_class"] is None]
    nc_ok = [s for s in no_cors if s["error_class"] is None]
    return {
        "rtt_ms": rtt_ms,
        "server_median": tcp["median"],
        "server_min": tcp["min"],
        "server_n": tcp["n"],
        "browser_methods": sorted({s["method"] for s in ok}),
        "browser": [s["rtt_ms"] for s in ok],
        "naive": [s["wall_ms"] for s in ok],
        "no_cors": [s["rtt_ms"] for s in nc_ok],
        "no_cors_failed": len(no_cors) - len(nc_ok),
        "no_cors_methods": sorted({s["method"] for s in nc_ok}),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=20, help="samples kept per probe (default 20)")
    ap.add_argument("--browser-part", nargs=3, metavar=("PAGE_URL", "TARGET_URL", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.browser_part:
        _browser_part(args.browser_part[0], args.browser_part[1], int(args.browser_part[2]))
        return 0
    why = DelayLink.unavailable()
    if why:
        print(f"skipped: {why}")
        return 0
    print(f"RTT accuracy, n={args.n} per probe; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print("ms; in brackets the error = measured − true RTT")
    print(
        f"{'link RTT':>8} | {'server TCP median':>17} | {'server TCP min':>15} | {'browser Resource Timing':>23} | "
        f"{'naive performance.now()':>23} | {'no CORS/TAO (fallback)':>22}"
    )
    for rtt in (40.0, 80.0):
        r = measure(rtt, args.n)
        assert r["browser_methods"] == ["resource-timing"], r["browser_methods"]
        print(
            f"{rtt:8.0f} | {_stats([r['server_median']], rtt):>17} | {_stats([r['server_min']], rtt):>15} | "
            f"{_stats(r['browser'], rtt):>23} | {_stats(r['naive'], rtt):>23} | "
            f"{_stats(r['no_cors'], rtt) if r['no_cors'] else 'all ' + str(r['no_cors_failed']) + ' failed':>22}"
        )
    print(
        "Browser columns are medians of the same fetches (first dropped): "
        "Resource Timing vs performance.now() around fetch;"
    )
    print(
        "the last column is a target without CORS or Timing-Allow-Origin headers "
        "(no-cors fetch, labelled fallback; target: within 10 ms)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
