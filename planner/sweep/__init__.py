"""Load sweeps: open-loop arrivals at a list of rates (or closed-loop concurrencies) against an endpoint.

`arrivals` makes the send schedules (Poisson or constant), `run` drives the probe engine through
them and summarises each step, `knee` finds where p95 TTFT leaves a target,
`curve` reads the queueing cost at any swept load.
"""

from planner.sweep.arrivals import ARRIVAL_KINDS, arrival_offsets_s
from planner.sweep.curve import queueing_p95_ms
from planner.sweep.knee import knee_caveat, knee_of, knee_sentence, load_words, thin_percentiles
from planner.sweep.run import SweepResult, SweepSpec, SweepStep, run_sweep

__all__ = [
    "ARRIVAL_KINDS",
    "SweepResult",
    "SweepSpec",
    "SweepStep",
    "arrival_offsets_s",
    "knee_caveat",
    "knee_of",
    "knee_sentence",
    "load_words",
    "queueing_p95_ms",
    "run_sweep",
    "thin_percentiles",
]
