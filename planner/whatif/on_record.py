"""A calibration's speed spread pooled with the record (issue 45): the endpoint's calibrations kept in the store
(planner.store.calibrations) and its probe history (planner.capacity.measured), through planner.whatif.drift.

`calibrate` → `whatif` is the path a user runs: the spec calibrate prints carries this pooled spread, so the
what-if's interval holds the drift between calibrations (and a stated prior until there is a record of it), not
only the seconds one calibration saw.
"""

from __future__ import annotations

from sqlalchemy.engine import Engine

from planner.capacity.measured import measured_slopes
from planner.store.calibrations import calibration_history, endpoint_names_of, record_calibration
from planner.whatif.calibration import Calibration
from planner.whatif.drift import DRIFT_PRIOR_SD, SpeedSpread, next_run_spread

__all__ = ["spread_on_record"]


def spread_on_record(
    engine: Engine,
    base_url: str,
    model: str,
    cal: Calibration,
    at_ms: int,
    *,
    prior_sd: float = DRIFT_PRIOR_SD,
    name: str = "calibrated",
) -> tuple[SpeedSpread, str]:
    """Record `cal` (ended at `at_ms`, UTC epoch ms) for the endpoint, and return the speed spread pooled over every
    calibration of it on record and its probe history, with the spec carrying it.

    Raises ValueError when the calibration's prefill fit has no positive slope (no spec), before anything is stored;
    the store's own errors (planner.store.StoreError) pass through.
    """
    cal.spec(name)  # no spec, nothing recorded
    history = calibration_history(engine, base_url, model)
    names = set(endpoint_names_of(engine, base_url, model))
    daily: list[float] = []
    if names:
        for slope in measured_slopes(engine):
            if slope.endpoint in names:
                daily.extend(slope.daily_tokens_per_s)
    this = (at_ms, list(cal.round_prefill_tokens_per_s))
    spread = next_run_spread([*history, this], daily, prior_sd=prior_sd)
    spec = cal.spec(name, speed_sd=spread.speed_sd)
    fit = cal.step.to_dict() if cal.step is not None else None
    record_calibration(engine, base_url, model, at_ms, cal.round_prefill_tokens_per_s, spec, fit)
    return spread, spec
