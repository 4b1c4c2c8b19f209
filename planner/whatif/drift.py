"""The speed spread a calibrated spec carries for the run it predicts: this calibration, the record, and a prior.

A calibration's rounds see the engine for a minute or two; the run a what-if predicts comes later and lasts longer,
and an engine's speed drifts over minutes and hours (a neighbour on the host, thermal limits, another tenant's
batch). So the spread that goes into the spec (`speed_sd`) pools, as log-rates about each kind's own level
(planner.spread.pooled_speed_sd_of):

- the prefill rate of every round of every calibration of the same endpoint on record (this one included), as one
  group: the differences between calibrations hours apart are the drift the next run may see;
- the endpoint's probe history, its prefill slope fitted day by day (planner.capacity.measured), as another.

Until that history holds drift beyond one calibration's window — at least MIN_CALIBRATIONS calibrations spanning
HISTORY_SPAN_S, or probe slopes on two or more days — a stated prior, DRIFT_PRIOR_SD, is the least spread assumed:
speed_sd = max(measured, prior). ±15 % (log-sd 0.15) is the drift measured on llama.cpp on a shared 2-core VM
(docs/whatif-model.md, issue 45), where the engine ran 15 % either way from its calibration minutes earlier. A floor,
not an addition: rounds that already saw the speed move by more within one calibration stand for that drift
themselves (bench/bench_whatif_drift.py: added in quadrature, it widened the 80 % interval to ±40–50 % where the
rounds alone covered 81 % of cells).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from planner.spread import pooled_speed_sd_of

__all__ = ["DRIFT_PRIOR_SD", "HISTORY_SPAN_S", "MIN_CALIBRATIONS", "SpeedSpread", "next_run_spread"]

DRIFT_PRIOR_SD = 0.15
HISTORY_SPAN_S = 3600.0
MIN_CALIBRATIONS = 3


@dataclass(frozen=True)
class SpeedSpread:
    """The spec's speed_sd and where it comes from.

    measured_sd: pooled from the rounds on record and the probe history (log-sd); prior_sd: the floor assumed for
    drift beyond the calibration window (0 once history holds it; speed_sd = max(measured_sd, prior_sd));
    calibrations: how many on record, this one included; span_s: first to last of them (s); probe_days: days of
    probe slopes used.
    """

    speed_sd: float
    measured_sd: float
    prior_sd: float
    calibrations: int
    span_s: float
    probe_days: int

    def describe(self) -> str:
        """One line for calibrate's output and the What-if page."""
        parts = [f"the rounds of {self.calibrations} calibration(s) over {_duration(self.span_s)}"]
        if self.probe_days:
            parts.append(f"the probe history's prefill slope on {self.probe_days} days")
        text = f"speed spread for the next run ±{self.speed_sd:.0%} (speed_sd={self.speed_sd:.3f}): " + " and ".join(
            parts
        )
        text += f" give ±{self.measured_sd:.0%}"
        if self.prior_sd > 0:
            text += (
                f", at least a prior of ±{self.prior_sd:.0%} for drift beyond the calibration window until the record "
                f"holds {MIN_CALIBRATIONS} calibrations over {_duration(HISTORY_SPAN_S)} or probes on two days"
            )
        return text


def _duration(s: float) -> str:
    if s >= 7200:
        return f"{s / 3600:,.0f} h"
    if s >= 120:
        return f"{s / 60:,.0f} min"
    return f"{s:,.0f} s"


def next_run_spread(
    calibrations: Sequence[tuple[int, Sequence[float]]],
    probe_daily_rates: Sequence[float] = (),
    prior_sd: float = DRIFT_PRIOR_SD,
) -> SpeedSpread:
    """The speed spread for the next run from `calibrations` on record ((UTC epoch ms, round prefill rates) each,
    this one included) and the probe history's daily prefill rates (see the module docstring)."""
    rounds = [r for _at, rates in calibrations for r in rates if r > 0]
    measured = pooled_speed_sd_of([rounds, [r for r in probe_daily_rates if r > 0]])
    times = [at for at, _rates in calibrations]
    span_s = (max(times) - min(times)) / 1000.0 if times else 0.0
    history = (len(calibrations) >= MIN_CALIBRATIONS and span_s >= HISTORY_SPAN_S) or len(probe_daily_rates) >= 2
    prior = 0.0 if history else max(0.0, prior_sd)
    return SpeedSpread(
        speed_sd=max(measured, prior),
        measured_sd=measured,
        prior_sd=prior,
        calibrations=len(calibrations),
        span_s=span_s,
        probe_days=len(probe_daily_rates),
    )
