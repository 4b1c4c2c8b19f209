"""Real browser: add an endpoint on the Endpoints page, let a real worker probe it, and read the hour-of-day chart."""

from __future__ import annotations

import contextlib
import datetime as dt
import time

import pytest
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from planner.simulator import SimulatorConfig, running_simulator
from tests.e2e.conftest import StreamlitServer, wait_for_app
from tests.support.worker_proc import running_worker

ENV = {"TTFT_PLANNER_MIN_INTERVAL_S": "0.5"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """The simulated endpoint, the dashboard and a worker over one fresh data dir."""
    data = tmp_path_factory.mktemp("probes-e2e")
    with running_simulator(SimulatorConfig(prefill_tokens_per_s=100_000, decode_tokens_per_s=2000, seed=5)) as sim_url:
        server = StreamlitServer(data, env=ENV)
        env = {**ENV, "TTFT_PLANNER_DATA_DIR": str(data), "TTFT_PLANNER_DATABASE_URL": None}
        try:
            with running_worker(data / "worker.log", env=env, stop_timeout_s=15) as worker:
                yield server, sim_url, worker
        finally:
            server.stop()


HOD_JS = """() => {
  // Plotly 7 ships arrays as {dtype, bdata[, shape]}; decode them like plotly.js does.
  const T = {f8: Float64Array, f4: Float32Array, i1: Int8Array, u1: Uint8Array, i2: Int16Array, u2: Uint16Array,
             i4: Int32Array, u4: Uint32Array};
  const dec = (v) => {
    if (v && v.bdata !== undefined) {
      const bin = atob(v.bdata), buf = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) buf[i] = bin.charCodeAt(i);
      const flat = Array.from(new T[v.dtype](buf.buffer));
      if (!v.shape) return flat;
      const cols = Number(String(v.shape).split(',')[1]);
      const rows = [];
      for (let i = 0; i < flat.length; i += cols) rows.push(flat.slice(i, i + cols));
      return rows;
    }
    return Array.from(v || [], r => (r && typeof r === 'object' && r.length !== undefined) ? Array.from(r) : r);
  };
  for (const el of document.querySelectorAll('.js-plotly-plot')) {
    const title = (el.layout && el.layout.title && (el.layout.title.text || el.layout.title)) || '';
    if (!String(title).includes('hour of day')) continue;
    const out = {};
    for (const t of el.data) {
      const cd = t.customdata ? dec(t.customdata).map(r => r[0]) : null;
      out[t.name] = {x: dec(t.x), y: dec(t.y).map(v => (v === null || Number.isNaN(v)) ? null : v), n: cd};
    }
    return out;
  }
  return null;
}"""


def _diagnosis(page: Page, server: StreamlitServer) -> str:
    """What a failure needs: the page's text, the worker's log and how many samples reached the database."""
    import sqlite3

    db = sqlite3.connect(server.data_dir / "planner.db")
    try:
        samples = db.execute("SELECT kind, ok, count(*) FROM probe_sample GROUP BY kind, ok").fetchall()
    finally:
        db.close()
    return (
        f"the hour-of-day chart never drew; samples stored (kind, ok, n): {samples}\n"
        f"page: {page.locator('body').inner_text()[:1500]}\n"
        f"worker log: {(server.data_dir / 'worker.log').read_text()[-2000:]}"
    )


def test_add_endpoint_wait_for_samples_and_read_hour_of_day(stack, page: Page, artifacts_dir):
    server, sim_url, worker = stack
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(server.url + "/endpoints")
    wait_for_app(page)
    page.get_by_role("textbox", name="Name", exact=True).fill("local-sim")
    page.get_by_role("textbox", name="Base URL", exact=True).fill(sim_url)
    page.get_by_role("textbox", name="Model", exact=True).fill("sim-1")
    page.get_by_role("spinbutton", name="Probe interval (s)", exact=True).fill("1")
    page.get_by_role("spinbutton", name="Timeout (s)", exact=True).fill("0.8")
    page.get_by_role("spinbutton", name="Prompt tokens", exact=True).fill("100")
    page.get_by_role("button", name="Add endpoint").click()
    wait_for_app(page)
    table = page.locator("[data-testid='stDataFrame']").first
    expect(table).to_be_visible()
    page.screenshot(path=str(artifacts_dir / "probes-endpoints.png"), full_page=True)

    # The worker picks the endpoint up within its reload interval and probes it every second.
    # A script run can end before plotly.js has drawn (it loads lazily): wait for the chart itself, not the run.
    page.goto(server.url + "/probes")
    deadline = time.monotonic() + 90
    hod = None
    while time.monotonic() < deadline:
        wait_for_app(page)
        with contextlib.suppress(PlaywrightTimeout):
            page.wait_for_function(f"() => ({HOD_JS})() !== null", timeout=20_000)
        hod = page.evaluate(HOD_JS)
        if hod and hod.get("p95") and sum(n for n in (hod["p95"]["n"] or []) if n) >= 5:
            break
        time.sleep(2)
        page.reload()
    assert hod is not None, _diagnosis(page, server)
    assert worker.poll() is None, (server.data_dir / "worker.log").read_text()[-2000:]
    n_by_hour = dict(zip(hod["p95"]["x"], hod["p95"]["n"], strict=True))
    tz_hour = dt.datetime.now().astimezone().hour  # Chromium and this process share the machine's time zone
    busy = [h for h, n in n_by_hour.items() if n]
    assert busy and set(busy) <= {tz_hour, (tz_hour - 1) % 24}, n_by_hour
    h = busy[-1]
    p50 = dict(zip(hod["p50"]["x"], hod["p50"]["y"], strict=True))[h]
    assert p50 is not None and 0 < p50 < 800  # a real TTFT from the simulated endpoint, in ms
    # Fewer than 20 samples this hour: the p95 is drawn in the grey "too few samples" trace.
    if n_by_hour[h] < 20:
        grey = [k for k in hod if k.startswith("p95, too few")][0]
        assert dict(zip(hod[grey]["x"], hod[grey]["y"], strict=True))[h] is not None
    expect(page.get_by_text("Samples (n)")).to_be_visible()
    page.screenshot(path=str(artifacts_dir / "probes-page.png"), full_page=True)
