"""The decision table: endpoints ranked, each verdict with the segment that decides it.

The ranking rule (RANKING_RULE, stated on the page and in the report): by
measured TTFT p95, lower first — except that an endpoint whose p95 rests on
fewer than 20 samples ranks after every endpoint with enough, whatever its p95,
and an endpoint without samples comes last; ties go to the lower monthly cost.
Rank alone overstates certainty, so every endpoint after the first carries
the bootstrap comparison with the leader. "Targets met" (TARGETS_RULE) counts
interaction types whose measured p95 is within the target — a different
question from the worksheet verdict cells beside it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import pandas as pd

from planner.compare.bootstrap import Bootstraps, Difference
from planner.compare.figures import EndpointMetrics
from planner.percentiles import min_n_for

__all__ = [
    "LEVEL_LABELS",
    "RANKING_RULE",
    "Ranked",
    "TARGETS_RULE",
    "decision_levels",
    "decision_table",
    "pairwise",
    "rank",
    "verdict_cell",
]

RANKING_RULE = (
    f"Ranked by measured TTFT p95, lower first. An endpoint whose p95 rests on fewer than "
    f"{min_n_for(0.95)} samples ranks after every endpoint with enough samples, whatever its p95 "
    "(a p95 from fewer is only the largest value seen); an endpoint without samples comes last; equal "
    "p95s go to the lower monthly cost."
)
TARGETS_RULE = (
    "“Targets met” counts the interaction types whose measured TTFT p95 is at or below their target. "
    "The verdict cells answer a different question: does the worksheet’s budget (target − queueing − "
    "cold start − network, the rest left for prefill) fit, with this endpoint’s own measured segments."
)

#: What a verdict level reads as (the page, the report and the CSV never show the raw codes).
LEVEL_LABELS = {
    "ok": "OK",
    "warn": "Prompt too long",
    "error": "Over budget",
    "missing": "No verdict",
    "no data": "No data",
}


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
    return (
        p95 is None,
        not m.p95_reliable,
        math.inf if p95 is None else p95,
        math.inf if cost is None else cost,
        m.name,
    )


def rank(metrics: Sequence[EndpointMetrics], boots: Bootstraps) -> list[Ranked]:
    """Rank endpoints by RANKING_RULE; boots holds each endpoint's measured TTFT samples (ms) by name."""
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


def verdict_column(label: str, target_ms: float) -> str:
    """The decision table's column for one interaction type: '<label> (<target> ms)'."""
    return f"{label} ({target_ms:,.0f} ms)"


def cell_level(level: str, goodput_fraction: float | None) -> str:
    """The level a decision cell shows: the verdict's, or "no data" when there are no samples to judge."""
    return "no data" if level == "no data" or goodput_fraction is None else level


def decision_levels(ranked: Sequence[Ranked]) -> pd.DataFrame:
    """The level code (a LEVEL_LABELS key) behind each verdict cell of decision_table(ranked): same rows, the
    verdict columns only — for colouring cells without reading their text back."""
    return pd.DataFrame(
        [
            {verdict_column(v.label, v.target_ms): cell_level(v.level, v.goodput_fraction) for v in r.metrics.verdicts}
            for r in ranked
        ]
    )


def verdict_cell(level: str, goodput_fraction: float | None, deciding_label: str) -> str:
    """'OK · 97% within target · decided by Network / first-token delivery'; 'No data' without samples."""
    head = LEVEL_LABELS.get(level, level)
    if cell_level(level, goodput_fraction) == "no data":
        return "No data · no samples in this window"
    good = f"{goodput_fraction:.0%} within target"
    return f"{head} · {good}" + (
        f" · decided by {deciding_label}" if deciding_label else " · a segment is not measured"
    )


def _vs_leader(r: Ranked) -> str:
    d = r.vs_leader
    if d is None:
        return "leader" if r.metrics.n_ok else "—"
    if d.point_ms is None:
        return f"no samples to compare with {d.a}"
    if d.equivalent:
        return f"practically equivalent to {d.a}"
    if not d.distinguishable:
        return f"cannot yet tell apart from {d.a}"
    delta = round(d.point_ms)
    return f"p95 {'+' if delta > 0 else '−'}{abs(delta):,} ms vs {d.a} ({d.verdict})"


def decision_table(ranked: Sequence[Ranked]) -> pd.DataFrame:
    """The decision table as a frame: one row per endpoint, best first (internal column names: label them
    with planner.present on the page / the report's table)."""
    rows = []
    for r in ranked:
        m = r.metrics
        p95 = m.ttft["p95"]
        row = {
            "rank": r.rank if m.n_ok and len(ranked) > 1 else None,  # one endpoint, or no samples: no rank
            "endpoint": m.name,
            "ttft_p95_ms": p95.value,
            "n": p95.n,
            "p95_reliable": p95.reliable,
            "targets_met": f"{r.targets_met} of {len(m.verdicts)}" if m.n_ok else None,
        }
        for v in m.verdicts:
            row[verdict_column(v.label, v.target_ms)] = verdict_cell(v.level, v.goodput_fraction, v.deciding_label)
        row["monthly_cost_usd"] = m.monthly_cost_usd
        row["vs_leader"] = _vs_leader(r)
        rows.append(row)
    return pd.DataFrame(rows)
