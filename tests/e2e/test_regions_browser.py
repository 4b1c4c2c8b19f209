"""Real browser: the Regions page's component measures from Chromium to local targets and the figures show up.

Two local targets (uvicorn, TCP_NODELAY) on another port than Streamlit's: one sends
Timing-Allow-Origin (Resource Timing is read), one does not (the labelled performance.now() fallback). Only this test
stores browser samples in the shared server's store. How accurate the figures are is bench/bench_rtt_accuracy.py's.
"""

from __future__ import annotations

import math
import re

import pytest
from playwright.sync_api import Page, expect

from planner.store import open_store
from planner.store.rtt import add_target, load_samples
from tests.e2e.conftest import wait_for_app
from tests.support.rtt_target import serve_in_thread


@pytest.fixture(scope="module")
def targets(app_server):
    server = serve_in_thread()
    eng = open_store(f"sqlite:///{app_server.data_dir / 'planner.db'}")
    add_target(eng, "local-tao", f"{server.base_url}/ping", name="Local target (TAO)", lat=52.5, lon=13.4)
    add_target(eng, "local-no-tao", f"{server.base_url}/ping-no-tao", name="Local target (no TAO)", lat=48.1, lon=11.6)
    yield eng
    server.stop()
    eng.dispose()


def test_browser_probe_stores_samples_with_the_vantage_and_shows_the_figure(
    page: Page, app_url, targets, artifacts_dir
):
    page.set_viewport_size({"width": 1400, "height": 1100})
    page.goto(f"{app_url}/regions?vantage=E2E+lab&regions=local-tao,local-no-tao")
    wait_for_app(page)
    button = page.get_by_role("button", name="Measure from this browser")
    expect(button).to_be_enabled()
    button.click()
    expect(page.get_by_text(re.compile("Stored 20 browser samples as “E2E lab”"))).to_be_visible()
    expect(page.get_by_text(re.compile("used the fallback timing"))).to_be_visible()

    samples = load_samples(targets, side="browser")
    methods = samples.groupby("region_id")["method"].unique().to_dict()
    assert list(methods["local-tao"]) == ["resource-timing"]
    assert list(methods["local-no-tao"]) == ["fetch-performance-now"]
    assert (samples["vantage"] == "E2E lab").all() and len(samples) == 20
    assert samples["error_class"].isna().all() and (samples["rtt_ms"] > 0).all()  # each one measured (none timed out)

    # the figure is on the page: the worksheet picker names the region, the side, the vantage and n
    wait_for_app(page)
    picker = page.get_by_role("combobox", name="Region figure")
    expect(picker).to_be_visible()
    shown = picker.evaluate("el => el.value || el.getAttribute('aria-label') || el.textContent || ''")
    shown += " " + page.locator("[data-testid='stSelectbox']").filter(has=picker).inner_text()
    # It offers the fastest region first (the table's rank 1), with the median of what was stored (nearest rank).
    by_region = samples.groupby("region_id")["rtt_ms"]
    medians = {region: sorted(v)[math.ceil(0.5 * len(v)) - 1] for region, v in by_region}
    fastest = min(medians.values())
    names = {"local-tao": "Local target (TAO)", "local-no-tao": "Local target (no TAO)"}
    m = re.search(r"(Local target \((?:no )?TAO\)) · browser from E2E lab · median ([0-9.]+) ms \(n=10\)", shown)
    assert m, shown
    picked = next(region for region, name in names.items() if name == m.group(1))
    assert medians[picked] == fastest and abs(float(m.group(2)) - medians[picked]) <= 0.05, (shown, medians)
    expect(page.locator("[data-testid='stMetricValue']").first).to_have_text(re.compile(r"^[0-9.,]+ ms$"))
    page.locator("[data-testid='stPlotlyChart'] .main-svg").first.wait_for()
    page.screenshot(path=str(artifacts_dir / "regions.png"), full_page=True)

    # the location label is remembered in this browser: a fresh visit without ?vantage= gets it back
    page.goto(f"{app_url}/regions")
    wait_for_app(page)
    expect(page.get_by_role("textbox", name="Your location / office")).to_have_value("E2E lab")
