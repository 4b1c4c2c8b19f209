"""Journey 3 in real Chromium: a PM/buyer compares two endpoints and forwards the report.

acme-sim-eu has a cold reading, simulated has none. The buyer first hands acme-sim-eu's cold reading to the
worksheet (Probes page), then opens Compare: simulated must show its cold start as missing — never acme's
figure under its name — and the downloaded report's numbers must equal what this test computes itself from
the rows it wrote (nearest rank by hand, not the app's code).
"""

from __future__ import annotations

import math
import re
import time

import pytest
import sqlalchemy as sa
from playwright.sync_api import Page, expect

from planner.store import open_store
from planner.store.worker import ColdReadingRow
from tests.e2e.conftest import StreamlitServer, wait_for_app
from tests.planner.test_compare_exports import _parse, _rows
from tests.support.compare_seed import seed_endpoint

DAY_MS = 86_400_000


def _nearest_rank(values, p: float) -> float:
    s = sorted(float(v) for v in values)
    return s[max(1, math.ceil(p * len(s))) - 1]


@pytest.fixture(scope="module")
def two_endpoints(tmp_path_factory):
    data = tmp_path_factory.mktemp("journey-compare")
    eng = open_store(f"sqlite:///{data / 'planner.db'}")
    now = int(time.time() * 1000)
    start = now - DAY_MS  # a day of probing, inside the page's default range (the last 7 days)
    values = {
        "acme-sim-eu": seed_endpoint(
            eng, "acme-sim-eu", median_ms=300, n=24 * 40, seed=5, start_ms=start, span_ms=DAY_MS - 60_000, vantage=""
        ),
        "simulated": seed_endpoint(
            eng, "simulated", median_ms=420, n=24 * 30, seed=6, start_ms=start, span_ms=DAY_MS - 60_000, vantage=""
        ),
    }
    with eng.begin() as c:
        eid = c.execute(sa.text("SELECT id FROM endpoint WHERE name = 'acme-sim-eu'")).scalar()
        c.execute(
            sa.insert(ColdReadingRow.__table__).values(
                endpoint_id=eid,
                vantage="",
                state="done",
                idle_s=330.0,
                requested_at_ms=now - 600_000,
                cold_ttft_ms=9_300.0,
                warm_ttft_ms=300.0,
                cold_minus_warm_ms=9_000.0,
                cold_attempts=2,
                cold_status_503=1,
                completed_at_ms=now - 200_000,
            )
        )
    eng.dispose()
    server = StreamlitServer(data)
    yield server, values
    server.stop()


def test_a_buyer_compares_and_forwards_a_report(two_endpoints, page: Page, tmp_path, artifacts_dir):
    server, values = two_endpoints
    page.set_viewport_size({"width": 1400, "height": 1100})
    # The buyer's worksheet holds acme-sim-eu's cold reading (handed over from the Probes page).
    page.goto(server.url + "/probes")
    wait_for_app(page)
    page.get_by_role("combobox", name="Endpoint @ vantage").click()
    page.get_by_role("option", name=re.compile(r"^acme-sim-eu @")).click()
    wait_for_app(page)
    page.get_by_role("button", name="Use in worksheet (segment 2)").click()
    wait_for_app(page)
    expect(page.get_by_role("spinbutton", name=re.compile("cold start"))).to_have_value("9000")

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
    page.screenshot(path=str(artifacts_dir / "journey3-compare.png"), full_page=True)

    with page.expect_download() as info:
        page.get_by_role("button", name="Download HTML report").click()
    saved = tmp_path / info.value.suggested_filename
    info.value.save_as(saved)
    doc = _parse(saved.read_text(encoding="utf-8"))
    decision = {r["Endpoint"][0]: r for r in _rows(doc.tables["decision"])}
    assert list(decision) == ["acme-sim-eu", "simulated"]  # lower p95 first; both have n ≥ 20
    for name in values:
        assert decision[name]["TTFT p95 (ms)"][0] == f"{p95[name]:,.0f}"
        assert decision[name]["Samples (n)"][0] == f"{n[name]}"
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
