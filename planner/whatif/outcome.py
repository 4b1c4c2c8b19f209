"""What a replay gives (planner.whatif.replay for the slot model, planner.whatif.batched for a batching engine):
per-request TTFT segments and the pool's totals, and the error a deployment that can never keep up raises.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import numpy as np

from planner.errors import PlannerError
from planner.percentiles import nearest_rank_index

__all__ = ["DEFAULT_MAX_WAIT_S", "SEGMENT_KEYS", "CannotKeepUp", "Replay", "p95_segments", "when_text"]

DEFAULT_MAX_WAIT_S = 3600.0
SEGMENT_KEYS = ("queue_ms", "cold_ms", "prefill_ms", "network_ms")


class CannotKeepUp(PlannerError):
    """The deployment can never serve the trace: its queue grows without bound. The message says why and when."""

    def __init__(self, deployment: str, message: str, at_ms: float | None = None) -> None:
        super().__init__(f"{deployment}: {message}")
        self.deployment = deployment
        self.reason = message
        self.at_ms = at_ms


@dataclass(frozen=True)
class Replay:
    """Per-request predictions (arrays in trace order) and the pool's totals.

    Arrays: arrival_ms (UTC epoch ms), the four segments (ms) and ttft_ms, their sum (computed here, the one place a
    predicted TTFT is added up), overflow (bool: served by the overflow pool). gpu_hours: GPU-hours paid for, the
    dedicated pool's (whole period) plus the serverless one's (from each scale-up until release), also computed here.
    serverless_tokens: tokens billed per token (prompt incl. cached + output) on a serverless pool. period_h: first
    arrival to last completion (h). cold_starts: replicas started on demand; peak_replicas: most at once.
    A batching engine's replay (planner.whatif.batched) also gives first_step_decodes: the decode tokens in the step
    that gave each request its first token (None for the slot model), engine_steps: the scheduler steps run, and
    engine_busy_ms: their total time over every replica (ms).
    """

    name: str
    arrival_ms: np.ndarray
    queue_ms: np.ndarray
    cold_ms: np.ndarray
    prefill_ms: np.ndarray
    network_ms: np.ndarray
    overflow: np.ndarray
    dedicated_gpu_hours: float
    serverless_gpu_hours: float
    serverless_tokens: float
    period_h: float
    cold_starts: int
    peak_replicas: int
    first_step_decodes: np.ndarray | None = None
    engine_steps: int = 0
    engine_busy_ms: float = 0.0
    ttft_ms: np.ndarray = field(init=False)
    gpu_hours: float = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ttft_ms", self.network_ms + self.queue_ms + self.cold_ms + self.prefill_ms)
        object.__setattr__(self, "gpu_hours", self.dedicated_gpu_hours + self.serverless_gpu_hours)

    @property
    def n(self) -> int:
        return len(self.ttft_ms)


def when_text(ms: float) -> str:
    """A UTC epoch ms as '2025-11-30 14:05 UTC'."""
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def p95_segments(rep: Replay, p: float = 0.95, around: float = 0.005) -> dict[str, float]:
    """The p-percentile TTFT split into its segments (ms), adding up to that percentile exactly.

    The requests within ±`around` × n ranks of the nearest-rank p-percentile (at least the request at that rank) are
    taken, each segment's mean over them, scaled so that the segments add up to the percentile: the population at the
    p95, not the tail above it, whose slowest queue and slowest cold start can belong to different requests and add
    up to more than any request waited.
    """
    order = np.argsort(rep.ttft_ms, kind="stable")
    n = rep.n
    k = nearest_rank_index(p, n)
    half = int(around * n)
    rows = order[max(0, k - half) : k + half + 1]
    means = {key: float(getattr(rep, key)[rows].mean()) for key in SEGMENT_KEYS}
    total = sum(means.values())
    value = float(rep.ttft_ms[order[k]])
    scale = value / total if total > 0 else 0.0
    return {key: m * scale for key, m in means.items()}
