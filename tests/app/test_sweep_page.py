"""AppTest: the Load sweep page shows a stored sweep — knee, p95 target line, per-step table with labels.

The sweep is constructed, not run: what the page shows of a stored sweep does not depend on how fast a simulator
answered on a loaded machine. Running a sweep (the knee moving with the slots, the queue behind one slot) is
tests/planner/sweep/test_sweep.py's subject.
"""

from __future__ import annotations

import os

from planner.percentiles import summarize
from planner.probes.ttft import ProbeTarget
from planner.store import open_store
from planner.store.sweeps import store_sweep
from planner.sweep import SweepResult, SweepSpec
from planner.sweep.knee import knee_of
from planner.sweep.run import SweepStep
from tests.app.conftest import chart_spec, open_page, shown_table

T0_MS = 1_780_000_000_000


def _step(index: int, load: float, ttfts_ms: list[float]) -> SweepStep:
    """One step as run_sweep summarises it: every request answered, percentiles by planner.percentiles."""
    q = summarize(ttfts_ms, ps=(0.5, 0.95, 0.99))
    return SweepStep(
        index=index,
        load=load,
        n_sent=len(ttfts_ms),
        n_ok=len(ttfts_ms),
        ttft_p50_ms=q["p50"].value,
        ttft_p95_ms=q["p95"].value,
        ttft_p99_ms=q["p99"].value,
        p95_reliable=q["p95"].reliable,
        p99_reliable=q["p99"].reliable,
        offered_rps=load,
        achieved_rps=load * 0.95,
        send_lag_p95_ms=1.0,
        wall_s=1.5,
        client_cpu_ms_per_request=0.8,
    )


def _one_slot_sweep() -> SweepResult:
    """One slot serving a 400-token prompt in ~100 ms: within a 500 ms p95 at 2 requests/s, queued far past it at 15."""
    spec = SweepSpec(
        target=ProbeTarget(base_url="http://127.0.0.1:9/v1", model="sim", prompt_tokens=400, max_tokens=2),
        mode="poisson",
        loads=(2.0, 15.0),
        step_duration_s=1.5,
        target_p95_ms=500,
        stop_after_knee=False,
    )
    steps = (
        _step(0, 2.0, [100.0 + 5 * i for i in range(3)]),
        _step(1, 15.0, [100.0 + 90 * i for i in range(22)]),
    )
    knee, over = knee_of([s.load for s in steps], [s.ttft_p95_ms for s in steps], 500)
    return SweepResult(
        spec=spec, steps=steps, started_at_ms=T0_MS, finished_at_ms=T0_MS + 3_500, knee_load=knee, over_load=over
    )


def _open_with_stored(result: SweepResult):
    """The Sweep page, `result` stored first (vantage "ci")."""
    eng = open_store(f"sqlite:///{os.environ['TTFT_PLANNER_DATA_DIR']}/planner.db")
    store_sweep(eng, result, vantage="ci", tool_version="test")
    eng.dispose()
    return open_page("sweep")


def test_empty_store_says_how_to_run_a_sweep():
    at = open_page("sweep")
    assert any("ttft-planner sweep" in i.value for i in at.info)


def test_a_stored_sweep_shows_its_knee_curve_and_steps():
    result = _one_slot_sweep()
    at = _open_with_stored(result)
    metrics = {m.label: m.value for m in at.metric}
    # the knee step's p95 rests on 3 requests: marked, as its table cell is (tests/app/test_sweep_thin_steps.py)
    assert metrics["Knee"] == "2 requests/s (too few)" and metrics["p95 target"] == "500 ms"
    table = shown_table(at)
    assert list(table.columns[:3]) == ["Load", "Requests sent", "Successful samples"]
    assert "TTFT p95 (ms)" in table.columns and "Achieved (req/s)" in table.columns
    fig = chart_spec(at, "sweep_curve")
    assert [t["name"] for t in fig["data"]] == ["TTFT p50", "TTFT p95", "TTFT p99"]
    assert any("knee 2" in (a.get("text") or "") for a in fig["layout"]["annotations"])

    # the curve as the worksheet's queueing segment: what 15 requests/s adds to p95 on one slot
    at.slider(key="sweep_at_load").set_value(15.0).run()
    queue = {m.label: m.value for m in at.metric}["Queueing p95"]
    expected = result.steps[1].ttft_p95_ms - result.steps[0].ttft_p95_ms
    assert expected > 1_000  # the queue behind the one slot, not noise
    assert queue == f"{expected:,.0f} ms"
    at.button(key="sweep_use").click().run()
    assert not at.exception, at.exception
    assert any("sweep #" in c.value.replace("\\", "") for c in at.caption), "\n".join(
        c.value for c in at.caption
    )  # on the worksheet, with provenance


def test_a_sweep_that_never_left_the_target_says_the_knee_was_not_reached():
    whole = _one_slot_sweep()
    steps = whole.steps[:1]  # only the 2 requests/s step: within the 500 ms target, nothing beyond it was tried
    knee, over = knee_of([s.load for s in steps], [s.ttft_p95_ms for s in steps], 500)
    result = SweepResult(
        spec=whole.spec, steps=steps, started_at_ms=T0_MS, finished_at_ms=T0_MS + 1_500, knee_load=knee, over_load=over
    )
    at = _open_with_stored(result)
    assert {m.label: m.value for m in at.metric}["Knee"] == "not reached"
    assert any(
        "Not reached: p95 stays within 500 ms up to 2 requests/s, the sweep's last step" in c.value for c in at.caption
    )
    assert "knee not reached (≥ 2 req/s)" in at.selectbox(key="sweep_run").options[0]
    fig = chart_spec(at, "sweep_curve")
    assert not any("knee" in (a.get("text") or "") for a in fig["layout"].get("annotations", []))


def test_a_run_label_names_its_zone_once():
    at = _open_with_stored(_one_slot_sweep())
    label = at.selectbox(key="sweep_run").options[0]
    assert label.count("UTC") == 1, label


def test_a_sweep_from_the_default_vantage_names_it_in_words():
    """A sweep run on the server's own (default, "") vantage: its provenance names "this server (default vantage)",
    never an empty pair of quotes."""
    eng = open_store(f"sqlite:///{os.environ['TTFT_PLANNER_DATA_DIR']}/planner.db")
    store_sweep(eng, _one_slot_sweep(), vantage="", tool_version="test")
    eng.dispose()
    at = open_page("sweep")
    [line] = [c.value for c in at.caption if c.value.startswith("Provenance:")]
    assert "measured from this server (default vantage) with ttft-planner test" in line and "“”" not in line
