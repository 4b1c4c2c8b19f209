"""AppTest: the Load sweep page shows a stored sweep — knee, p95 target line, per-step table with labels."""

from __future__ import annotations

import asyncio
import os

from planner.probes.ttft import ProbeTarget
from planner.simulator import SimulatorConfig, running_simulator
from planner.store import open_store
from planner.store.sweeps import store_sweep
from planner.sweep import SweepSpec, run_sweep
from tests.app.conftest import chart_spec, open_page


def test_empty_store_says_how_to_run_a_sweep():
    at = open_page("sweep")
    assert any("ttft-planner sweep" in i.value for i in at.info)


def test_a_stored_sweep_shows_its_knee_curve_and_steps():
    cfg = SimulatorConfig(
        slots=1, prefill_tokens_per_s=4000, decode_tokens_per_s=1000, base_overhead_ms=0, prefix_cache_tokens=0, seed=0
    )
    with running_simulator(cfg) as url:
        spec = SweepSpec(
            target=ProbeTarget(base_url=url, model="sim", prompt_tokens=400, max_tokens=2),
            mode="poisson",
            loads=(2.0, 15.0),
            step_duration_s=1.5,
            target_p95_ms=500,
            stop_after_knee=False,
        )
        result = asyncio.run(run_sweep(spec))
    eng = open_store(f"sqlite:///{os.environ['TTFT_PLANNER_DATA_DIR']}/planner.db")
    store_sweep(eng, result, vantage="ci", tool_version="test")
    eng.dispose()

    at = open_page("sweep")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Knee"] == "2 requests/s" and metrics["p95 target"] == "500 ms"
    table = at.dataframe[0].value
    assert list(table.columns[:3]) == ["Load", "Requests sent", "Successful samples"]
    assert "TTFT p95 (ms)" in table.columns and "Achieved (req/s)" in table.columns
    fig = chart_spec(at, "sweep_curve")
    assert [t["name"] for t in fig["data"]] == ["TTFT p50", "TTFT p95", "TTFT p99"]
    assert any("knee 2" in (a.get("text") or "") for a in fig["layout"]["annotations"])

    # the curve as the worksheet's queueing segment: what 15 requests/s adds to p95 on one slot
    at.slider(key="sweep_at_load").set_value(15.0).run()
    queue = {m.label: m.value for m in at.metric}["Queueing p95"]
    expected = result.steps[1].ttft_p95_ms - result.steps[0].ttft_p95_ms
    assert queue == f"{expected:,.0f} ms"
    at.button(key="sweep_use").click().run()
    assert not at.exception, at.exception
    assert any("sweep #" in c.value.replace("\\", "") for c in at.caption), "\n".join(
        c.value for c in at.caption
    )  # on the worksheet, with provenance
