"""AppTest: a batching engine on the What-if page (issue 45) — its engine and knobs per candidate, the step model's
fit from the calibration on record with its residuals, and the sentence a lead forwards."""

import re

from planner.store import database_url, open_store
from planner.store.calibrations import record_calibration
from planner.whatif.calibrate_steps import StepFit
from tests.app.test_whatif import _replay_stored_log

# What `ttft-planner calibrate --engine vllm` printed for an engine of 20 ms a step + 1 ms a decode token.
VLLM = "dedicated:name=vllm,engine=vllm,replicas=1,slots=64,prefill=12000,decode=47.62,step_ms=20.00,usd_per_gpu_h=3.2"
SLOTS = "dedicated:name=slots,replicas=1,slots=8,prefill=12000,decode=60,usd_per_gpu_h=3.2,rtt=40"


def _record_fit() -> None:
    eng = open_store(database_url())
    fit = StepFit(20.0, 1.0, {1: 21.0, 2: 22.4, 4: 23.8}, load=3, residuals=(0.06, -0.04))
    spec = VLLM.replace("name=vllm", "name=calibrated")
    record_calibration(eng, "http://gpu-box:8000/v1", "llama", 1_764_460_800_000, [12000.0], spec, fit.to_dict())
    eng.dispose()


def test_a_batching_candidate_shows_its_engine_its_fit_and_its_regime(app):
    _record_fit()
    _replay_stored_log(app, f"{VLLM}\n{SLOTS}")
    assert not app.exception, app.exception
    said = [c.value for c in app.caption if c.value.startswith("Serving model")]
    assert said[0].startswith(
        "Serving model: 1 replica, always warm; vLLM (V1 engine), continuous batching: 64 running sequences a "
        "replica, 8,192 tokens a step, chunked prefill, decodes share a step with prompts, KV cache not limiting; "
        "a step 20 ms + 0.0833 ms a prompt token + 1 ms a decode token"
    ), said
    assert said[1].startswith("Serving model: 1 replica × 8 slots, always warm; first in first out"), said
    fits = [c.value for c in app.caption if c.value.startswith("step model fitted by the calibration")]
    assert len(fits) == 1, fits  # the slot candidate has none
    assert "of llama at `http://gpu-box:8000/v1`" in fits[0]  # a URL is shown as code, never as a link
    # the measured steps against the line 20 + 1 × running: 21, 22 and 24 ms
    assert "21.0 ms with 1 running (+0%), 22.4 ms with 2 running (+2%), 23.8 ms with 4 running (-1%)" in fits[0]
    assert "prompts sent under 3 running decodes against the model: +6%, -4%" in fits[0]
    regimes = [m.value for m in app.markdown if m.value.startswith("**vllm** is ")]
    assert len(regimes) == 1 and re.search(r"-bound: .*; a second replica", regimes[0]), regimes
    assert any(m.value.startswith("**slots** is ") for m in app.markdown)
