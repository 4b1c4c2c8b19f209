"""Per-endpoint comparison figures computed from raw samples (pure functions over a frame).

Which samples count (DESIGN §3): TTFT percentiles use successful samples of
kind scheduled, manual or warm that are not a deliberately cached series;
cold samples are shown apart (the latest cold reading); skipped slots are
neither successes nor failures. Error and retry rates are over attempted
samples (ok or failed). Goodput against a target = the share of attempted
samples that succeeded with ttft_ms ≤ target (a failure is a miss).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from zoneinfo import ZoneInfo

import pandas as pd

from planner.budget import SEGMENTS, BudgetResult, Worksheet, compute_worksheet, verdict_text
from planner.compare.data import ColdReading, EndpointInfo, RttFigure
from planner.provenance import Figure, Source
from planner.stats import Percentile, percentile, summarize

__all__ = [
    "CostBasis",
    "EndpointMetrics",
    "InteractionVerdict",
    "MEASURED_KINDS",
    "PHASES",
    "attempted",
    "endpoint_metrics",
    "hourly_profile",
    "measured",
    "queue_excess_ms",
    "replace_interaction",
]

MEASURED_KINDS = ("scheduled", "manual", "warm")
# Phase timings, each in ms from just before the request was sent (DESIGN §3), in wire order.
PHASES: dict[str, str] = {
    "dns_ms": "DNS",
    "connect_ms": "Connect",
    "tls_ms": "TLS",
    "headers_ms": "Headers",
    "first_event_ms": "First event",
    "ttft_ms": "First token",
    "first_content_ms": "First visible content",
}
HOUR_MIN_N = 20  # an hour's p95 is shown (and used for queueing excess) only from n ≥ 20


@dataclass(frozen=True)
class CostBasis:
    """The team's traffic and each endpoint's blended price, and where they came from.

    tokens_per_month: all tokens (input + output) a month; price_usd_per_mtok:
    endpoint name → blended serverless price per 1M tokens; source: e.g.
    "Capacity page inputs" or "typed defaults".
    """

    tokens_per_month: float = 0.0
    price_usd_per_mtok: Mapping[str, float] = field(default_factory=dict)
    source: str = "typed defaults"

    def monthly_usd(self, endpoint: str) -> float | None:
        """tokens_per_month / 1e6 × price, or None when the endpoint has no price."""
        price = self.price_usd_per_mtok.get(endpoint)
        if price is None or not math.isfinite(price) or price < 0:
            return None
        return self.tokens_per_month / 1e6 * price


@dataclass(frozen=True)
class InteractionVerdict:
    """One interaction type for one endpoint: worksheet verdict with measured segments, and goodput.

    deciding_segment: SEGMENTS key or "prefill_ms" — the segment that decides the
    verdict (the culprit when over budget, prefill when the prompt does not fit,
    else the largest share of the target).
    """

    interaction: str
    label: str
    target_ms: float
    level: str
    sentence: str
    deciding_segment: str
    goodput_fraction: float | None
    p95_meets_target: bool | None
    result: BudgetResult
    worksheet: Worksheet

    @property
    def deciding_label(self) -> str:
        return SEGMENTS.get(self.deciding_segment, "Prefill")


@dataclass(frozen=True)
class EndpointMetrics:
    """Everything the comparison shows for one endpoint over the chosen window and vantage."""

    endpoint: EndpointInfo
    n_attempted: int
    n_ok: int
    ttft: dict[str, Percentile]
    first_content: dict[str, Percentile]
    error_rate: float | None
    retry_rate: float | None
    errors_by_class: dict[str, int]
    phases_p50_ms: dict[str, float | None]
    queue_ms: float | None
    cold: ColdReading | None
    rtt: RttFigure | None
    monthly_cost_usd: float | None
    verdicts: list[InteractionVerdict]
    first_at_ms: int | None
    last_at_ms: int | None

    @property
    def name(self) -> str:
        return self.endpoint.name

    @property
    def p95_reliable(self) -> bool:
        return self.ttft["p95"].reliable


def measured(df: pd.DataFrame) -> pd.DataFrame:
    """Samples that enter the TTFT percentiles: ok, kind in MEASURED_KINDS, not a cached series, ttft known."""
    m = df["ok"] & df["kind"].isin(MEASURED_KINDS) & ~df["cached_series"] & df["ttft_ms"].notna()
    return df[m]


def attempted(df: pd.DataFrame) -> pd.DataFrame:
    """Samples that were attempted (ok or failed) in MEASURED_KINDS, cached series excluded."""
    return df[df["kind"].isin(MEASURED_KINDS) & ~df["cached_series"]]


def hourly_profile(df: pd.DataFrame, tz: str = "UTC") -> pd.DataFrame:
    """Per endpoint and hour of day (0–23 in time zone `tz`): p50_ms, p95_ms, n, error_rate, reliable.

    p95_ms is None when the hour has no successful sample; reliable is n ≥ 20.
    Raises zoneinfo.ZoneInfoNotFoundError for an unknown time zone.
    """
    zone = ZoneInfo(tz)
    att = attempted(df)
    cols = ["endpoint", "hour", "p50_ms", "p95_ms", "n", "error_rate", "reliable"]
    if att.empty:
        return pd.DataFrame(columns=cols)
    hours = pd.to_datetime(att["started_at_ms"], unit="ms", utc=True).dt.tz_convert(zone).dt.hour
    att = att.assign(hour=hours.to_numpy())
    rows = []
    for (endpoint, hour), grp in att.groupby(["endpoint", "hour"], sort=True):
        ok = measured(grp)["ttft_ms"]
        p50, p95 = percentile(ok, 0.5), percentile(ok, 0.95)
        rows.append({
            "endpoint": endpoint, "hour": int(hour), "p50_ms": p50.value, "p95_ms": p95.value, "n": p95.n,
            "error_rate": float((~grp["ok"]).mean()), "reliable": p95.n >= HOUR_MIN_N,
        })
    return pd.DataFrame(rows, columns=cols)


def queue_excess_ms(hourly: pd.DataFrame) -> float | None:
    """Segment 1 for one endpoint's hourly rows: worst reliable hour's p95 − quietest reliable hour's p50 (ms).

    None when no hour has n ≥ 20 (DESIGN §3: queueing excess over the quiet-hour baseline).
    """
    rel = hourly[hourly["reliable"]]
    if rel.empty:
        return None
    return max(0.0, float(rel["p95_ms"].max()) - float(rel["p50_ms"].min()))


def _deciding_segment(r: BudgetResult) -> str:
    if r.budget_negative and r.culprit_segment:
        return r.culprit_segment
    if not math.isnan(r.prefill_needed_ms) and not r.prompt_fits:
        return "prefill_ms"
    shares = {k: getattr(r, k) for k in SEGMENTS}
    if not math.isnan(r.prefill_needed_ms):
        shares["prefill_ms"] = r.prefill_needed_ms
    return max(shares, key=shares.__getitem__)


def _filled_worksheet(base: Worksheet, info: EndpointInfo, queue_ms: float | None, n_queue: int,
                      rtt: RttFigure | None, window: str) -> Worksheet:
    ws = base
    if queue_ms is not None:
        ws = ws.with_figure("queue_ms", Figure(queue_ms, "ms", Source.PROBE, info.name, n_queue, window))
    if rtt is not None:
        ws = ws.with_figure("network_ms", Figure(rtt.median_ms, "ms", Source.RTT, f"{rtt.vantage or 'server'} → {rtt.region}",
                                                 rtt.n, "median", rtt.measured_at_ms))
    return ws


def endpoint_metrics(
    info: EndpointInfo,
    samples: pd.DataFrame,
    hourly: pd.DataFrame,
    *,
    worksheet: Worksheet,
    cold: ColdReading | None = None,
    rtt: RttFigure | None = None,
    cost: CostBasis | None = None,
    window: str = "",
) -> EndpointMetrics:
    """Compute one endpoint's figures from its samples (already filtered to it) and its hourly rows.

    The worksheet verdicts use `worksheet` for the target, cold start, prefill rate,
    prompt length and cache hit, with segment 1 (queueing excess) and segment 4
    (RTT median to the endpoint's region) replaced by this endpoint's measurements
    where they exist. Raises planner.budget.BudgetError if the worksheet is invalid.
    """
    att = attempted(samples)
    ok = measured(samples)
    ttft_ms = ok["ttft_ms"].tolist()
    n_att = len(att)
    verdicts = []
    queue_ms = queue_excess_ms(hourly)
    for key, target_ms in worksheet.targets_ms.items():
        ws = _filled_worksheet(replace_interaction(worksheet, key), info, queue_ms, len(ttft_ms), rtt, window)
        r = compute_worksheet(ws)
        level, sentence = verdict_text(r)
        good = None if n_att == 0 else float(((att["ok"]) & (att["ttft_ms"] <= target_ms)).sum()) / n_att
        p95 = percentile(ttft_ms, 0.95)
        meets = None if p95.value is None else p95.value <= target_ms
        verdicts.append(InteractionVerdict(key, worksheet.target_labels.get(key, key), target_ms, level, sentence,
                                           _deciding_segment(r), good, meets, r, ws))
    phases = {}
    for col in PHASES:
        v = percentile(ok[col].tolist(), 0.5)
        phases[col] = v.value
    errors = att.loc[~att["ok"], "error_class"].fillna("unknown").value_counts()
    starts = att["started_at_ms"]
    return EndpointMetrics(
        endpoint=info,
        n_attempted=n_att,
        n_ok=len(ttft_ms),
        ttft=summarize(ttft_ms, (0.5, 0.95, 0.99)),
        first_content=summarize(ok["first_content_ms"].tolist(), (0.5, 0.95)),
        error_rate=None if n_att == 0 else float((~att["ok"]).mean()),
        retry_rate=None if n_att == 0 else float((att["attempts"] > 1).mean()),
        errors_by_class={str(k): int(v) for k, v in errors.items()},
        phases_p50_ms=phases,
        queue_ms=queue_ms,
        cold=cold,
        rtt=rtt,
        monthly_cost_usd=None if cost is None else cost.monthly_usd(info.name),
        verdicts=verdicts,
        first_at_ms=None if starts.empty else int(starts.min()),
        last_at_ms=None if starts.empty else int(starts.max()),
    )


def replace_interaction(ws: Worksheet, key: str) -> Worksheet:
    """The worksheet with `key` as the interaction in force."""
    return replace(ws, interaction=key)

