"""Journey 3 in real Chromium: a PM/buyer compares two endpoints and forwards the report.

acme-sim-eu has a cold reading, simulated has none. The buyer first hands acme-sim-eu's cold reading to the
worksheet (Probes page), then opens Compare: simulated must show its cold start as missing — never acme's
figure under its name — and the downloaded report's numbers must equal what this test computes itself from
the rows it wrote (nearest rank by hand, not the app's code). The file's name carries both endpoints, and it opens
with the network off: its charts draw (one hour-of-day line per endpoint) and it fetches nothing.
"""

from __future__ import annotations

import math
import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from planner.store import open_store
from tests.e2e.conftest import (
    StreamlitServer,
    new_context,
    pick,
    stop_auto_refresh_ticks,
    tick_auto_refresh,
    track_auto_refresh,
    wait_for_app,
)
from tests.planner.compare.test_compare_exports import _parse, _rows
from tests.support.compare_seed import seed_endpoint
from tests.support.store_states import store_acme_cold_reading
from tests.support.store_template import migrated_sqlite

DAY_MS = 86_400_000


def _nearest_rank(values, p: float) -> float:
    s = sorted(float(v) for v in values)
    return s[max(1, math.ceil(p * len(s))) - 1]


@pytest.fixture(scope="module")
def two_endpoints(tmp_path_factory):
    data = tmp_path_factory.mktemp("journey-compare")
    eng = open_store(migrated_sqlite(data / "planner.db"))
    now = int(time.time() * 1000)
    start = now - DAY_MS  # a day of probing, inside the page's default range (the last 7 days)
    # 80 and 60 samples an hour on average: every hour of the day has n ≥ 20 (one reliable p95 line per endpoint in
    # the report's hour-of-day chart) wherever the hours fall in the random draw
    values = {
        "acme-sim-eu": seed_endpoint(
            eng, "acme-sim-eu", median_ms=300, n=24 * 80, seed=5, start_ms=start, span_ms=DAY_MS - 60_000, vantage=""
        ),
        "simulated": seed_endpoint(
            eng, "simulated", median_ms=420, n=24 * 60, seed=6, start_ms=start, span_ms=DAY_MS - 60_000, vantage=""
        ),
    }
    store_acme_cold_reading(eng, now)
    eng.dispose()
    server = StreamlitServer(data)
    yield server, values
    server.stop()


def _open_offline(browser: Browser, path: Path, names: list[str], shot: Path) -> list[str]:
    """Open the report at `path` with the network off; return every non-file URL it tried to load."""
    context = new_context(browser, offline=True, viewport={"width": 1300, "height": 900})
    tried: list[str] = []

    def block(route):
        tried.append(route.request.url)
        route.abort()

    context.route("http*://**", block)
    page = context.new_page()
    page.goto(path.as_uri())
    page.locator("#chart-0 .main-svg").first.wait_for()
    for i in range(3):
        expect(page.locator(f"#chart-{i} .main-svg").first).to_be_attached()
    # the hour-of-day chart drew one line per endpoint (every hour of the day has n ≥ 20 in the seed)
    for name in names:
        expect(page.locator("#chart-0 .legendtext").filter(has_text=name).first).to_be_attached()
    expect(page.locator("#chart-0 g.trace.scatter")).to_have_count(len(names))
    expect(page.locator("#decision")).to_contain_text(names[0])
    page.screenshot(path=str(shot), full_page=True)
    context.close()
    return tried


def test_a_buyer_compares_and_forwards_a_report(two_endpoints, page: Page, browser: Browser, tmp_path, artifacts_dir):
    server, values = two_endpoints
    page.set_viewport_size({"width": 1400, "height": 1100})
    # The buyer's worksheet holds acme-sim-eu's cold reading (handed over from the Probes page).
    console: list[str] = []  # kept for the diagnosis below: messages, and which requests failed
    page.on("console", lambda msg: console.append(f"{msg.type}: {msg.text}"))
    page.on("requestfailed", lambda req: console.append(f"request failed: {req.url} ({req.failure})"))
    page.on("response", lambda r: console.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
    track_auto_refresh(page)
    page.goto(server.url + "/probes")
    wait_for_app(page)
    pick(page, "Endpoint @ vantage", re.compile(r"^acme-sim-eu @"))
    # The Probes page refreshes its live view every 10 s (a timer in the browser). A tick that lands while the hand-off
    # below opens the Worksheet once left that page blank (about 1 run in 8 on a loaded machine): fire the timer from
    # now until the browser drops it, so that every run goes through that window.
    assert tick_auto_refresh(page) == 1, "the Probes page's auto-refresh timer was not found"
    page.get_by_role("button", name="Use in worksheet (segment 2)").click()
    wait_for_app(page)
    try:
        expect(page.get_by_role("spinbutton", name=re.compile("cold start"))).to_have_value("9000")
        expect(page.get_by_role("heading", name="TTFT worksheet")).to_be_visible()
        assert stop_auto_refresh_ticks(page) >= 1
    except AssertionError as exc:
        # Seen twice in 16 suites run four at a time (load 20–40), before the hand-off forgot the Probes page's
        # fragments: the Worksheet's URL written, its main area blank (an auto-refresh tick of the Probes page ran
        # after the Worksheet's run). What the next look at it needs: the page, the browser console, the server.
        page.screenshot(path=str(artifacts_dir / "journey-compare-handoff-blank.png"), full_page=True)
        log = (server.data_dir / "streamlit.log").read_text()[-3000:]
        seen = "\n".join(console[-40:])
        # whether the script still runs, and what the main area holds (stale elements carry data-stale)
        state = page.locator("[data-testid='stApp']").get_attribute("data-test-script-state")
        main = page.locator("[data-testid='stMain']")
        held = f"url={page.url} script-state={state} elements={main.locator('[data-testid]').count()} " + (
            f"stale={main.locator('[data-stale=true]').count()} text={main.inner_text()[:400]!r}"
        )
        raise AssertionError(f"{exc}\npage: {held}\nbrowser console:\n{seen}\nserver log:\n{log}") from exc

    page.get_by_role("link", name="Compare").click()
    wait_for_app(page)
    n = {k: len(v) for k, v in values.items()}
    p95 = {k: _nearest_rank(v, 0.95) for k, v in values.items()}
    # The difference sentence names each n beside its own endpoint.
    expect(
        page.get_by_text(re.compile(rf"n={n['simulated']} for simulated, n={n['acme-sim-eu']} for acme-sim-eu"))
    ).to_be_visible()
    expect(page.get_by_text(re.compile("Ranked by measured TTFT p95, lower first"))).to_be_visible()
    # simulated's worksheet: cold start missing, no verdict; acme's cold reading never appears under its name.
    sim = page.locator("[data-testid='stExpander']").filter(has_text="simulated: ")
    expect(sim).to_contain_text("No verdict")
    sim.locator("summary").first.click()
    expect(sim).to_contain_text("weight loading (cold start): missing — not measured for this endpoint")
    assert "acme-sim-eu" not in sim.inner_text() and "9,000" not in sim.inner_text()
    acme = page.locator("[data-testid='stExpander']").filter(has_text="acme-sim-eu: ")
    acme.locator("summary").first.click()
    expect(acme).to_contain_text("9,000 ms (cold reading · acme-sim-eu")
    page.locator("[data-testid='stPlotlyChart'] .main-svg").first.wait_for()  # the page's charts draw
    page.screenshot(path=str(artifacts_dir / "journey3-compare.png"), full_page=True)

    with page.expect_download() as info:
        page.get_by_role("button", name="Download HTML report").click()
    assert info.value.suggested_filename == "ttft-comparison-acme-sim-eu-vs-simulated.html"
    saved = tmp_path / info.value.suggested_filename
    info.value.save_as(saved)
    doc = _parse(saved.read_text(encoding="utf-8"))
    decision = {r["Endpoint"][0]: r for r in _rows(doc.tables["decision"])}
    assert list(decision) == ["acme-sim-eu", "simulated"]  # lower p95 first; both have n ≥ 20
    for name in values:
        assert decision[name]["TTFT p95 (ms)"][0] == f"{p95[name]:,.0f}"
        assert decision[name]["Samples (n)"][0] == f"{n[name]:,}"
    metrics = {r["Endpoint"][0]: r for r in _rows(doc.tables["metrics"])}
    assert metrics["acme-sim-eu"]["latest cold TTFT (ms)"][0] == "9,300"
    assert metrics["acme-sim-eu"]["cold − warm (ms)"][0] == "9,000"
    assert metrics["simulated"]["latest cold TTFT (ms)"][0] == "missing — no cold reading"
    assert metrics["simulated"]["TTFT p50 (ms)"][0] == f"{_nearest_rank(values['simulated'], 0.5):,.0f}"
    sheets = [r for r in _rows(doc.tables["worksheets"]) if r["Endpoint"][0] == "simulated"]
    assert sheets and all(
        r["Weight loading (cold start)"][0] == "missing — not measured for this endpoint"
        and r["verdict"][0] == "No verdict"
        for r in sheets
    )
    assert not any("acme-sim-eu" in cell[0] for r in sheets for cell in r.values())
    diffs = doc.lists["differences"]
    assert any(f"n={n['simulated']} for simulated, n={n['acme-sim-eu']} for acme-sim-eu" in d for d in diffs)
    # Forwarded to someone offline: the file draws its charts with no network and fetches nothing.
    names = list(decision)
    assert _open_offline(browser, saved, names, artifacts_dir / "journey3-report-offline.png") == []
