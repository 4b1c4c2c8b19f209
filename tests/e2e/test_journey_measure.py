"""Journey 2 in real Chromium: a lead measures two endpoints and a region.

Two local simulated endpoints with known, different delays are probed by a real worker; a day of earlier
probes (written by the test) gives the queueing shape; a cold reading is on record. The lead reads each
endpoint on the Probes page, hands segment 1 and segment 2 to the worksheet, then measures a region from the
server on the Regions page and hands its RTT over. Every number read is checked against a value this test
computes itself from the rows in the store (pure Python nearest rank, not the app's SQL).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import re
import time

import pytest
import sqlalchemy as sa
from playwright.sync_api import Page, expect

from planner.endpoints import add_endpoint
from planner.simulator import SimulatorConfig, running_simulator
from planner.store import leases, open_store
from planner.store.probes import ProbeSampleRow, insert_samples
from planner.store.rtt import add_target, load_samples
from planner.store.worker import ColdReadingRow
from tests.e2e.conftest import StreamlitServer, wait_for_app
from tests.support.rtt_target import serve_in_thread
from tests.support.worker_proc import running_worker

ENV = {"TTFT_PLANNER_MIN_INTERVAL_S": "0.5"}
HOUR_MS = 3_600_000
FAST_MS, SLOW_MS = 40.0, 240.0  # the simulators' fixed overhead before the first token


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


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    data = tmp_path_factory.mktemp("journey-measure")
    mp = pytest.MonkeyPatch()
    mp.setenv("TTFT_PLANNER_MIN_INTERVAL_S", ENV["TTFT_PLANNER_MIN_INTERVAL_S"])  # 1 s probes for this test
    fast_cfg = SimulatorConfig(prefill_tokens_per_s=1e7, decode_tokens_per_s=2000, base_overhead_ms=FAST_MS, seed=1)
    slow_cfg = SimulatorConfig(prefill_tokens_per_s=1e7, decode_tokens_per_s=2000, base_overhead_ms=SLOW_MS, seed=2)
    with running_simulator(fast_cfg) as fast_url, running_simulator(slow_cfg) as slow_url:
        eng = open_store(f"sqlite:///{data / 'planner.db'}")
        fast = add_endpoint(
            eng,
            {
                "name": "fast-local",
                "base_url": fast_url,
                "model": "sim",
                "interval_s": 1,
                "timeout_s": 0.9,
                "prompt_tokens": 50,
                "max_tokens": 4,
            },
        )
        slow = add_endpoint(
            eng,
            {
                "name": "slow-local",
                "base_url": slow_url,
                "model": "sim",
                "interval_s": 1,
                "timeout_s": 0.9,
                "prompt_tokens": 50,
                "max_tokens": 4,
            },
        )
        with running_worker(data / "worker.log", env=_worker_env(data)):
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                if min(len(_samples(eng, fast.id)), len(_samples(eng, slow.id))) >= 8:
                    break
                time.sleep(1)
        assert min(len(_samples(eng, fast.id)), len(_samples(eng, slow.id))) >= 8, (data / "worker.log").read_text()[
            -2000:
        ]
        # Two earlier hours of fast-local (3 days ago, hours far from now in the browser's zone): a quiet one at
        # ~60 ms and a busy one at ~500 ms, 25 samples each — enough for a p95 in both.
        now = dt.datetime.now().astimezone()
        base = (now - dt.timedelta(days=3)).replace(minute=0, second=0, microsecond=0)
        quiet_at, busy_at = base.replace(hour=(now.hour + 6) % 24), base.replace(hour=(now.hour + 12) % 24)
        rows = []
        for at, level in ((quiet_at, 60.0), (busy_at, 500.0)):
            t0 = int(at.timestamp() * 1000)
            rows += [
                ProbeSampleRow(
                    endpoint_id=fast.id,
                    vantage="",
                    kind="scheduled",
                    scheduled_at_ms=t0 + i * 60_000,
                    started_at_ms=t0 + i * 60_000,
                    ok=True,
                    ttft_ms=level + 2 * i,
                )
                for i in range(25)
            ]
        insert_samples(eng, rows)
        done = int(time.time() * 1000)
        with eng.begin() as c:
            c.execute(
                sa.insert(ColdReadingRow.__table__).values(
                    endpoint_id=fast.id,
                    vantage="",
                    state="done",
                    idle_s=90.0,
                    requested_at_ms=done - 120_000,
                    cold_ttft_ms=7_540.0,
                    warm_ttft_ms=41.0,
                    cold_minus_warm_ms=7_499.0,
                    cold_attempts=1,
                    cold_status_503=0,
                    completed_at_ms=done,
                )
            )
        target = serve_in_thread()
        add_target(eng, "local-box", f"{target.base_url}/ping", name="Local box", lat=52.5, lon=13.4, enabled=False)
        server = StreamlitServer(data, env=ENV)
        try:
            yield server, eng, fast, slow, (quiet_at.hour, busy_at.hour), data
        finally:
            server.stop()
            target.stop()
            eng.dispose()
            mp.undo()


@contextlib.contextmanager
def _worker(data, eng):
    """A worker process on the journey's store, holding the default vantage's lease (the server probe asks it)."""
    with running_worker(data / "worker-regions.log", env=_worker_env(data)) as worker:
        deadline = time.monotonic() + 60
        while not leases.live_leases(leases.current(eng), int(time.time() * 1000), ""):
            assert time.monotonic() < deadline and worker.poll() is None, (data / "worker-regions.log").read_text()
            time.sleep(0.2)
        yield


def _worker_env(data) -> dict[str, str | None]:
    """The journey's store (its data dir, not a database URL from the caller's environment), default vantage."""
    return {**ENV, "TTFT_PLANNER_DATA_DIR": str(data), "TTFT_PLANNER_DATABASE_URL": None, "TTFT_PLANNER_VANTAGE": None}


def _metric(page: Page, label: str) -> str:
    box = page.locator("[data-testid='stMetric']").filter(has=page.get_by_text(label, exact=True)).first
    return box.locator("[data-testid='stMetricValue']").inner_text().strip()


def _pick_series(page: Page, name: str) -> None:
    page.get_by_role("combobox", name="Endpoint @ vantage").click()
    page.get_by_role("option", name=re.compile(rf"^{name} @")).click()
    wait_for_app(page)


def test_a_lead_measures_two_endpoints_and_a_region(measured, page: Page, artifacts_dir):
    server, eng, fast, slow, (quiet_h, busy_h), data = measured
    page.set_viewport_size({"width": 1400, "height": 1100})
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
        assert delay <= _nearest_rank(live, 0.5) < delay + 150  # the known delay shows through
        page.screenshot(path=str(artifacts_dir / f"journey2-probes-{ep.name}.png"), full_page=True)

    # Segment 1 of fast-local: busy hour's p95 − quiet hour's p50 (only those two hours have n ≥ 20).
    _pick_series(page, fast.name)
    quiet = [60.0 + 2 * i for i in range(25)]
    busy = [500.0 + 2 * i for i in range(25)]
    seg1 = _nearest_rank(busy, 0.95) - _nearest_rank(quiet, 0.5)
    assert _metric(page, "worst-hour p95 − quietest-hour p50") == f"{seg1:,.0f} ms"
    expect(
        page.get_by_text(re.compile(rf"worst hour {busy_h:02d}:00 p95 .* quietest {quiet_h:02d}:00 p50"))
    ).to_be_visible()
    assert _metric(page, "latest cold − warm") == "7,499 ms"
    page.get_by_role("button", name="Use in worksheet (segment 1)").click()
    wait_for_app(page)
    queue_box = page.get_by_role("spinbutton", name=re.compile("queueing"))
    expect(queue_box).to_have_value(f"{seg1:.0f}")
    expect(page.get_by_text(re.compile(rf"probe · {fast.name}"))).to_be_visible()

    # Segment 2: back on Probes (the sidebar keeps the session), the cold reading goes to the worksheet too.
    page.get_by_role("link", name="Probes").click()
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
