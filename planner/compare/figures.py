"""Per-endpoint comparison figures computed from raw samples (pure functions over a frame).

Which samples count: planner.endpoints.samples' one definition (successful samples of
kind scheduled or manual that are not a deliberately cached series, as on the
Probes page); cold readings are shown apart (the latest per endpoint); skipped
slots are neither successes nor failures. Error and retry rates are over attempted
samples (ok or failed). Goodput against a target = the share of attempted
samples that succeeded with ttft_ms ≤ target (a failure is a miss).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from zoneinfo import ZoneInfo

import pandas as pd

from planner.compare.data import ColdReading, EndpointInfo, RttFigure
from planner.endpoints.samples import MEASURED_KINDS
from planner.percentiles import Percentile, percentile, summarize
from planner.worksheet.budget import SEGMENTS, BudgetResult, Worksheet, compute_worksheet, verdict_text
from planner.worksheet.provenance import Figure, Source
from planner.worksheet.segment_figures import Queueing, queueing_segment, queueing_words

__all__ = [
    "CostBasis",
    "EndpointMetrics",
    "InteractionVerdict",
    "PHASES",
    "attempted",
    "endpoint_metrics",
    "hourly_profile",
    "measured",
    "filled_worksheet",
    "own_segments",
    "queue_excess_ms",
    "replace_interaction",
]

# Phase timings, each in ms from just before the request was sent, in wire order.
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

    level: "ok", "warn", "error" (planner.worksheet.budget.verdict_text), "missing" (a segment this endpoint has not
    measured and the worksheet did not type: no verdict) or "no data" (no samples: nothing to judge).
    deciding_segment: SEGMENTS key or "prefill_ms" — the segment that decides the
    verdict (the culprit when over budget, prefill when the prompt does not fit,
    else the largest share of the target); "" without a verdict. result is None without a verdict;
    missing lists the SEGMENTS keys the endpoint lacks.
    """

    interaction: str
    label: str
    target_ms: float
    level: str
    sentence: str
    deciding_segment: str
    goodput_fraction: float | None
    p95_meets_target: bool | None
    result: BudgetResult | None
    worksheet: Worksheet
    missing: list[str] = field(default_factory=list)

    @property
    def deciding_label(self) -> str:
        if not self.deciding_segment:
            return ""
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
        rows.append(
            {
                "endpoint": endpoint,
                "hour": int(hour),
                "p50_ms": p50.value,
                "p95_ms": p95.value,
                "n": p95.n,
                "error_rate": float((~grp["ok"]).mean()),
                "reliable": p95.n >= HOUR_MIN_N,
            }
        )
    return pd.DataFrame(rows, columns=cols)


def queue_excess_ms(hourly: pd.DataFrame) -> float | None:
    """Segment 1 for one endpoint's hourly rows (planner.worksheet.segment_figures.queueing_segment: the worst hour's
    p95 − the quietest hour's p50, over hours with n ≥ 20); None when fewer than two hours have n ≥ 20."""
    return queueing_segment(hourly).value_ms


def _deciding_segment(r: BudgetResult) -> str:
    if r.budget_negative and r.culprit_segment:
        return r.culprit_segment
    if not math.isnan(r.prefill_needed_ms) and not r.prompt_fits:
        return "prefill_ms"
    shares = {k: getattr(r, k) for k in SEGMENTS}
    if not math.isnan(r.prefill_needed_ms):
        shares["prefill_ms"] = r.prefill_needed_ms
    return max(shares, key=shares.__getitem__)


def own_segments(
    info: EndpointInfo, queue: Queueing, cold: ColdReading | None, rtt: RttFigure | None, window: str
) -> dict[str, Figure]:
    """The segments this endpoint measured itself (SEGMENTS key → Figure): queueing from its own hours, cold start
    from its own cold reading (cold − warm), network from the RTT to its own region. Absent when not measured."""
    out: dict[str, Figure] = {}
    if queue.value_ms is not None:
        out["queue_ms"] = Figure(
            queue.value_ms,
            "ms",
            Source.PROBE,
            f"{info.name} · {queueing_words(queue)}",
            queue.n,
            window,
        )
    if cold is not None and cold.segment_ms is not None:
        out["cold_ms"] = Figure(
            round(cold.segment_ms, 1),
            "ms",
            Source.COLD_READING,
            f"{info.name} · cold {cold.cold_ms:,.0f} ms − warm {cold.warm_ms:,.0f} ms",
            1,
            "latest" if cold.source == "cold reading" else cold.source,
            cold.measured_at_ms,
        )
    if rtt is not None:
        out["network_ms"] = Figure(
            rtt.median_ms,
            "ms",
            Source.RTT,
            f"{rtt.vantage or 'server'} → {rtt.region}",
            rtt.n,
            "median",
            rtt.measured_at_ms,
        )
    return out


def filled_worksheet(base: Worksheet, own: Mapping[str, Figure]) -> tuple[Worksheet, list[str]]:
    """The worksheet an endpoint is judged with, and the segments it lacks.

    Each segment is the endpoint's own measurement when it has one; else the worksheet's figure when that was
    typed (or a preset): the user's assumption, labelled as such; else missing — a figure the worksheet got from
    *another* measurement (another endpoint's probes or cold reading, another region's RTT) is never borrowed.
    """
    ws, missing = base, []
    for key in SEGMENTS:
        if key in own:
            ws = ws.with_figure(key, own[key])
        elif base.segment(key).is_measured:
            missing.append(key)
    return ws, missing


def _verdict(
    key: str, target_ms: float, base: Worksheet, own: Mapping[str, Figure], att: pd.DataFrame, ttft_ms: list[float]
) -> InteractionVerdict:
    label = base.target_labels.get(key, key)
    ws, missing = filled_worksheet(replace_interaction(base, key), own)
    n_att = len(att)
    good = None if n_att == 0 else float(((att["ok"]) & (att["ttft_ms"] <= target_ms)).sum()) / n_att
    p95 = percentile(ttft_ms, 0.95)
    meets = None if p95.value is None else p95.value <= target_ms
    if ttft_ms and not missing:
        r = compute_worksheet(ws)
        level, sentence = verdict_text(r)
        return InteractionVerdict(key, label, target_ms, level, sentence, _deciding_segment(r), good, meets, r, ws, [])
    # no verdict: no worksheet result, nor a deciding segment
    if not ttft_ms:
        level, sentence = "no data", "No samples in this window: nothing to judge."
    else:
        names = ", ".join(SEGMENTS[k].lower() for k in missing)
        level = "missing"
        sentence = (
            f"No verdict: {names} not measured for this endpoint (the worksheet's figure was measured elsewhere and "
            "is not borrowed). Measure it here — a cold reading, a day of probing, the RTT to its region — or type "
            "a value on the Worksheet page."
        )
    return InteractionVerdict(key, label, target_ms, level, sentence, "", good, meets, None, ws, missing)


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

    The worksheet verdicts use `worksheet` for the target, prefill rate, prompt length and cache hit; each
    segment is this endpoint's own measurement (filled_worksheet), the worksheet's typed value, or missing.
    Raises planner.worksheet.budget.BudgetError if the worksheet is invalid.
    """
    att = attempted(samples)
    ok = measured(samples)
    ttft_ms = ok["ttft_ms"].tolist()
    n_att = len(att)
    queue = queueing_segment(hourly, info.interval_s) if not hourly.empty else Queueing(None, reason="no samples")
    own = own_segments(info, queue, cold, rtt, window)
    verdicts = [
        _verdict(key, target_ms, worksheet, own, att, ttft_ms) for key, target_ms in worksheet.targets_ms.items()
    ]
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
        queue_ms=queue.value_ms,
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
