"""Journey 2 in real Chromium: a lead measures two endpoints and a region.

Two local simulated endpoints with known, different delays are probed by a real worker: fast-local is registered
already, the lead adds slow-local on the Endpoints page while the worker runs (it picks the new endpoint up by
itself). A day of earlier probes (written by the test) gives fast-local's queueing shape; a cold reading is on
record. Once both have samples the worker stops (the figures then stay put while the pages read them); the lead
reads each endpoint on the Probes page (slow-local's hour-of-day chart too), hands segment 1 and segment 2 to the
worksheet, then measures a region from the server on the Regions page and hands its RTT over. Every number read is
checked against a value this test computes itself from the rows in the store (pure Python nearest rank, not the
app's SQL). How close a probe's TTFT comes to the simulators' known delay is bench/bench_probe_accuracy.py's figure.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import re
import sqlite3
import time

import pytest
import sqlalchemy as sa
from playwright.sync_api import Page, expect

from planner.endpoints.registry import add_endpoint, get_endpoint
from planner.simulator import SimulatorConfig, running_simulator
from planner.store import leases, open_store
from planner.store.probes import insert_samples
from planner.store.rtt import add_target, load_samples
from tests.e2e.conftest import StreamlitServer, open_expander, pick, wait_for_app
from tests.support.cold_readings import store_cold_reading
from tests.support.probe_rows import slot_row
from tests.support.rtt_target import serve_in_thread
from tests.support.store_template import migrated_sqlite
from tests.support.worker_proc import running_worker, wait_logged

ENV = {"TTFT_PLANNER_MIN_INTERVAL_S": "0.5"}
HOUR_MS = 3_600_000
FAST_MS, SLOW_MS = 40.0, 240.0  # the simulators' fixed overhead before the first token
MIN_SAMPLES = 8  # of each endpoint before the lead reads the pages

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


def _nearest_rank(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[max(1, math.ceil(p * len(s))) - 1]


def _samples(eng, endpoint_id: int) -> list[tuple[int, float]]:
    """(started_at_ms, ttft_ms) of every sample (successful scheduled/manual probe) of an endpoint."""
    with eng.connect() as c:
        return [
            (int(t), float(v))
            for t, v in c.execute(
                sa.text(
                    "SELECT started_at_ms, ttft_ms FROM probe_sample WHERE endpoint_id = :e "
                    "AND ok AND ttft_ms IS NOT NULL "
                    "AND kind IN ('scheduled', 'manual')"
                ),
                {"e": endpoint_id},
            )
        ]


def _endpoint_fields(name: str, base_url: str) -> dict:
    return {
        "name": name,
        "base_url": base_url,
        "model": "sim",
        "interval_s": 1,
        "timeout_s": 0.9,
        "prompt_tokens": 50,
        "max_tokens": 4,
    }


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    data = tmp_path_factory.mktemp("journey-measure")
    mp = pytest.MonkeyPatch()
    mp.setenv("TTFT_PLANNER_MIN_INTERVAL_S", ENV["TTFT_PLANNER_MIN_INTERVAL_S"])  # 1 s probes for this test
    fast_cfg = SimulatorConfig(prefill_tokens_per_s=1e7, decode_tokens_per_s=2000, base_overhead_ms=FAST_MS, seed=1)
    slow_cfg = SimulatorConfig(prefill_tokens_per_s=1e7, decode_tokens_per_s=2000, base_overhead_ms=SLOW_MS, seed=2)
    with running_simulator(fast_cfg) as fast_url, running_simulator(slow_cfg) as slow_url:
        eng = open_store(migrated_sqlite(data / "planner.db"))
        fast = add_endpoint(eng, _endpoint_fields("fast-local", fast_url))
        # Two earlier hours of fast-local (3 days ago, hours far from now in the browser's zone): a quiet one at
        # ~60 ms and a busy one at ~500 ms, 25 samples each — enough for a p95 in both.
        now = dt.datetime.now().astimezone()
        base = (now - dt.timedelta(days=3)).replace(minute=0, second=0, microsecond=0)
        quiet_at, busy_at = base.replace(hour=(now.hour + 6) % 24), base.replace(hour=(now.hour + 12) % 24)
        rows = []
        for at, level in ((quiet_at, 60.0), (busy_at, 500.0)):
            t0 = int(at.timestamp() * 1000)
            rows += [slot_row(fast.id, t0 + i * 60_000, level + 2 * i) for i in range(25)]
        insert_samples(eng, rows)
        done = int(time.time() * 1000)
        store_cold_reading(
            eng,
            fast.id,
            idle_s=90.0,
            cold_ttft_ms=7_540.0,
            warm_ttft_ms=41.0,
            requested_at_ms=done - 120_000,
            completed_at_ms=done,
        )
        target = serve_in_thread()
        add_target(eng, "local-box", f"{target.base_url}/ping", name="Local box", lat=52.5, lon=13.4, enabled=False)
        server = StreamlitServer(data, env=ENV)
        try:
            yield server, eng, fast, slow_url, (quiet_at.hour, busy_at.hour), data
        finally:
            server.stop()
            target.stop()
            eng.dispose()
            mp.undo()


@contextlib.contextmanager
def _worker(data, eng):
    """A worker process on the journey's store, holding the default vantage's lease (the server probe asks it)."""
    log = data / "worker-regions.log"
    with running_worker(log, env=_worker_env(data)) as worker:
        wait_logged(
            lambda: worker.poll() is not None or leases.live_leases(leases.current(eng), int(time.time() * 1000), ""),
            "the worker's lease on the default vantage",
            log,
        )
        assert worker.poll() is None, log.read_text()[-2000:]
        yield


def _worker_env(data) -> dict[str, str | None]:
    """The journey's store (its data dir, not a database URL from the caller's environment), default vantage."""
    return {**ENV, "TTFT_PLANNER_DATA_DIR": str(data), "TTFT_PLANNER_DATABASE_URL": None, "TTFT_PLANNER_VANTAGE": None}


def _metric(page: Page, label: str) -> str:
    box = page.locator("[data-testid='stMetric']").filter(has=page.get_by_text(label, exact=True)).first
    return box.locator("[data-testid='stMetricValue']").inner_text().strip()


def _pick_series(page: Page, name: str) -> None:
    pick(page, "Endpoint @ vantage", re.compile(rf"^{re.escape(name)} @"))


def _add_on_the_endpoints_page(page: Page, url: str, fields: dict) -> None:
    """Register an endpoint through the Endpoints page's form, as a user types it."""
    page.goto(url + "/endpoints")
    open_expander(page, "Add an endpoint")  # closed while endpoints exist
    for label, key in (("Name", "name"), ("Base URL", "base_url"), ("Model", "model")):
        page.get_by_role("textbox", name=label, exact=True).fill(fields[key])
    for label, key in (
        ("Probe interval (s)", "interval_s"),
        ("Timeout (s)", "timeout_s"),
        ("Prompt tokens", "prompt_tokens"),
        ("Max tokens", "max_tokens"),
    ):
        box = page.get_by_role("spinbutton", name=label, exact=True)
        box.fill(f"{fields[key]:g}")
        box.press("Tab")  # committed before the submit click (a click racing the commit was once lost under load)
    page.get_by_role("button", name="Add endpoint").click()
    wait_for_app(page)
    expect(page.get_by_text(f"Added {fields['name']}")).to_be_visible()
    expect(page.locator("[data-testid='stDataFrame']").first).to_be_visible()


def _diagnosis(page: Page, data) -> str:
    """What a failure of the hour-of-day chart needs: the page's text, the worker's log and the stored samples."""
    db = sqlite3.connect(data / "planner.db")
    try:
        samples = db.execute("SELECT endpoint_id, kind, ok, count(*) FROM probe_sample GROUP BY 1, 2, 3").fetchall()
    finally:
        db.close()
    return (
        f"the hour-of-day chart never drew; samples stored (endpoint, kind, ok, n): {samples}\n"
        f"page: {page.locator('body').inner_text()[:1500]}\n"
        f"worker log: {(data / 'worker.log').read_text()[-2000:]}"
    )


def _check_hour_of_day(page: Page, eng, endpoint_id: int, data) -> None:
    """The Probes page's hour-of-day chart (of the series on show, only probed in the last minutes): n and p50 of the
    hour(s) it was probed in, as counted here from the store; a p95 from fewer than 20 samples is drawn grey."""
    by_hour: dict[int, list[float]] = {}
    for t, v in _samples(eng, endpoint_id):
        by_hour.setdefault(dt.datetime.fromtimestamp(t / 1000).astimezone().hour, []).append(v)
    # A script run can end before plotly.js has drawn (it loads lazily), and the chart of the series shown before
    # stays on the page until this series' run replaces it: wait for a chart whose n per hour is this series' own.
    total = sum(len(v) for v in by_hour.values())
    try:
        same_n = f"h !== null && h.p95 && h.p95.n && h.p95.n.reduce((a, b) => a + b, 0) === {total}"
        page.wait_for_function(f"() => {{ const h = ({HOD_JS})(); return {same_n}; }}")
    except Exception as exc:
        raise AssertionError(_diagnosis(page, data)) from exc
    hod = page.evaluate(HOD_JS)
    n_by_hour = {h: n for h, n in zip(hod["p95"]["x"], hod["p95"]["n"], strict=True) if n}
    # Chromium and this process share the machine's time zone
    assert n_by_hour == {h: len(v) for h, v in by_hour.items()}, (n_by_hour, by_hour)
    # probed for minutes: one hour of day, or two at the turn of an hour (the stored times say which, above)
    assert len(n_by_hour) <= 2, n_by_hour
    p50 = dict(zip(hod["p50"]["x"], hod["p50"]["y"], strict=True))
    grey = next(k for k in hod if k.startswith("p95, too few"))
    for h, values in by_hour.items():
        assert p50[h] == pytest.approx(_nearest_rank(values, 0.5)), (h, p50[h], values)
        if len(values) < 20:
            assert dict(zip(hod[grey]["x"], hod[grey]["y"], strict=True))[h] is not None
    expect(page.get_by_text("Samples (n)")).to_be_visible()


def test_a_lead_measures_two_endpoints_and_a_region(measured, page: Page, artifacts_dir):
    server, eng, fast, slow_url, (quiet_h, busy_h), data = measured
    page.set_viewport_size({"width": 1400, "height": 1100})

    # The worker probes fast-local; the lead adds slow-local on the Endpoints page and the worker picks it up.
    log = data / "worker.log"
    with running_worker(log, env=_worker_env(data)) as worker:
        _add_on_the_endpoints_page(page, server.url, _endpoint_fields("slow-local", slow_url))
        page.screenshot(path=str(artifacts_dir / "journey2-endpoints.png"), full_page=True)
        slow = get_endpoint(eng, "slow-local")
        wait_logged(
            lambda: (
                worker.poll() is not None
                or min(len(_samples(eng, fast.id)), len(_samples(eng, slow.id))) >= MIN_SAMPLES
            ),
            f"{MIN_SAMPLES} samples of each endpoint",
            log,
        )
        assert worker.poll() is None, log.read_text()[-2000:]
    # The worker has stopped: what the pages show below stays put while this test reads the store.

    page.goto(server.url + "/probes")
    wait_for_app(page)
    # Each endpoint's own figures, as computed here from its stored rows.
    for ep, delay in ((fast, FAST_MS), (slow, SLOW_MS)):
        _pick_series(page, ep.name)
        values = [v for _, v in _samples(eng, ep.id)]
        expect(page.locator("[data-testid='stMetricValue']").first).to_have_text(f"{len(values):,}")
        assert _metric(page, "Samples (n)") == f"{len(values):,}"
        assert _metric(page, "p50 TTFT") == f"{_nearest_rank(values, 0.5):,.0f} ms"
        live = [v for t, v in _samples(eng, ep.id) if t > time.time() * 1000 - 86_400_000]
        assert _nearest_rank(live, 0.5) >= delay  # the known delay shows through (a server-side sleep)
        if ep is slow:  # probed only in the last minutes: the hour-of-day chart holds this hour alone
            _check_hour_of_day(page, eng, slow.id, data)
        page.screenshot(path=str(artifacts_dir / f"journey2-probes-{ep.name}.png"), full_page=True)

    # Segment 1 of fast-local, as computed here from its stored rows: the worst hour's p95 − the quietest hour's
    # p50 (possibly the same hour), over hours of day with n ≥ 20. The seeded quiet and busy hours have 25 each; the
    # live hour joins them when the worker, slowed by a loaded machine, stored 20 or more before the other endpoint
    # had enough.
    _pick_series(page, fast.name)
    by_hour: dict[int, list[float]] = {}
    for t, v in _samples(eng, fast.id):
        by_hour.setdefault(dt.datetime.fromtimestamp(t / 1000).astimezone().hour, []).append(v)
    reliable = {h: v for h, v in by_hour.items() if len(v) >= 20}
    assert {quiet_h, busy_h} <= set(reliable), sorted((h, len(v)) for h, v in by_hour.items())
    quiet_at = min(reliable, key=lambda h: _nearest_rank(reliable[h], 0.5))
    worst_at = max(reliable, key=lambda h: _nearest_rank(reliable[h], 0.95))
    seg1 = max(0.0, _nearest_rank(reliable[worst_at], 0.95) - _nearest_rank(reliable[quiet_at], 0.5))
    assert _metric(page, "worst-hour p95 − quietest-hour p50") == f"{seg1:,.0f} ms"
    hours_words = (
        rf"worst and quietest hour {worst_at:02d}:00: p95 .* p50"
        if worst_at == quiet_at
        else rf"worst hour {worst_at:02d}:00 p95 .* quietest {quiet_at:02d}:00 p50"
    )
    expect(page.get_by_text(re.compile(hours_words))).to_be_visible()
    assert _metric(page, "latest cold − warm") == "7,499 ms"
    page.get_by_role("button", name="Use in worksheet (segment 1)").click()
    wait_for_app(page)
    queue_box = page.get_by_role("spinbutton", name=re.compile("queueing"))
    expect(queue_box).to_have_value(f"{seg1:.0f}")
    expect(page.get_by_text(re.compile(rf"probe · {fast.name}"))).to_be_visible()

    # Segment 2: back on Probes (the sidebar keeps the session), the cold reading goes to the worksheet too.
    page.get_by_role("link", name="Probes", exact=True).click()
    wait_for_app(page)
    _pick_series(page, fast.name)
    page.get_by_role("button", name="Use in worksheet (segment 2)").click()
    wait_for_app(page)
    expect(page.get_by_role("spinbutton", name=re.compile("cold start"))).to_have_value("7499")
    expect(page.get_by_role("spinbutton", name=re.compile("queueing"))).to_have_value(f"{seg1:.0f}")

    # A region RTT from the server: the page asks the worker, which makes real TCP connects to a local box; the
    # median as computed from the stored rows.
    page.goto(server.url + "/regions?regions=local-box")
    wait_for_app(page)
    with _worker(data, eng):
        page.get_by_role("button", name="Probe from the server").click()
        wait_for_app(page)
        picker = page.get_by_role("combobox", name="Region figure")
        expect(picker).to_be_visible()
    rtts = load_samples(eng, region_ids=["local-box"], side="server")
    ok = [
        float(v)
        for v, m, err in zip(rtts["rtt_ms"], rtts["method"], rtts["error_class"], strict=True)
        if m == "tcp-connect" and (err is None or err != err) and v == v
    ]  # the TCP connects: 1 round trip each
    median = _nearest_rank(ok, 0.5)
    shown = picker.evaluate("el => el.value || el.getAttribute('aria-label') || el.textContent || ''")
    shown += " " + page.locator("[data-testid='stSelectbox']").filter(has=picker).inner_text()
    assert f"Local box · server from this server (default vantage) · median {median:.1f} ms (n={len(ok)})" in shown
    assert _metric(page, "Network segment") == f"{median:,.1f} ms"
    page.screenshot(path=str(artifacts_dir / "journey2-regions.png"), full_page=True)
