"""The decision table: endpoints ranked, each verdict with the segment that decides it.

Order: endpoints whose p95 is reliable (n ≥ 20) first; then the most interaction
types whose measured TTFT p95 meets the target; then the lower TTFT p95; then
the lower monthly cost. Rank alone overstates certainty, so every endpoint
after the first carries the bootstrap comparison with the leader and is
marked "tied" when the data cannot yet tell it from the leader.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import pandas as pd

from planner.compare.metrics import EndpointMetrics
from planner.compare.stats import Bootstraps, Difference

__all__ = ["Ranked", "decision_table", "pairwise", "rank", "verdict_cell"]


@dataclass(frozen=True)
class Ranked:
    """One decision-table row: rank (1 = best), the endpoint's metrics, and its comparison with the leader."""

    rank: int
    metrics: EndpointMetrics
    targets_met: int
    vs_leader: Difference | None

    @property
    def tied_with_leader(self) -> bool:
        return self.vs_leader is not None and not self.vs_leader.distinguishable


def _key(m: EndpointMetrics) -> tuple:
    p95 = m.ttft["p95"].value
    cost = m.monthly_cost_usd
    met = sum(1 for v in m.verdicts if v.p95_meets_target)
    return (not m.p95_reliable, -met, math.inf if p95 is None else p95, math.inf if cost is None else cost, m.name)


def rank(metrics: Sequence[EndpointMetrics], boots: Bootstraps) -> list[Ranked]:
    """Rank endpoints (see module doc); boots holds each endpoint's measured TTFT samples (ms) by name."""
    ordered = sorted(metrics, key=_key)
    out: list[Ranked] = []
    for i, m in enumerate(ordered):
        met = sum(1 for v in m.verdicts if v.p95_meets_target)
        diff = boots.difference(ordered[0].name, m.name) if i > 0 else None
        out.append(Ranked(i + 1, m, met, diff))
    return out


def pairwise(names: Sequence[str], boots: Bootstraps) -> list[Difference]:
    """Every pair's p95 difference (b − a, in the order given) with its interval and verdict."""
    return [boots.difference(a, b) for a, b in combinations(names, 2)]


def verdict_cell(level: str, goodput_fraction: float | None, deciding_label: str) -> str:
    """'OK · 97% within target · decided by Network / first-token delivery'."""
    good = "no samples" if goodput_fraction is None else f"{goodput_fraction:.0%} within target"
    return f"{level.upper()} · {good} · decided by {deciding_label}"


def decision_table(ranked: Sequence[Ranked]) -> pd.DataFrame:
    """The decision table as a frame: one row per endpoint, best first (columns carry units)."""
    rows = []
    for r in ranked:
        m = r.metrics
        p95 = m.ttft["p95"]
        row = {
            "rank": r.rank,
            "endpoint": m.name,
            "ttft_p95_ms": p95.value,
            "n": p95.n,
            "p95_reliable": p95.reliable,
            "targets_met": f"{r.targets_met}/{len(m.verdicts)}",
        }
        for v in m.verdicts:
            row[f"{v.label} ({v.target_ms:,.0f} ms)"] = verdict_cell(v.level, v.goodput_fraction, v.deciding_label)
        row["monthly_cost_usd"] = m.monthly_cost_usd
        if r.vs_leader is None:
            row["vs_leader"] = "leader"
        elif r.tied_with_leader:
            row["vs_leader"] = f"cannot yet tell apart from {r.vs_leader.a}"
        else:
            row["vs_leader"] = f"p95 {r.vs_leader.point_ms:+,.0f} ms vs {r.vs_leader.a} ({r.vs_leader.verdict})"
        rows.append(row)
    return pd.DataFrame(rows)
