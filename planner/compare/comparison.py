"""One comparison: read the store for 2–5 endpoints, compute, rank, and describe the method.

The page, the report and the CLI all call `compare()` and render its result,
so they always agree on every number.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from planner.compare.bootstrap import (
    DEFAULT_MARGIN,
    DEFAULT_N_BOOT,
    DEFAULT_SEED,
    Bootstraps,
    Difference,
    Interval,
    Margin,
)
from planner.compare.data import (
    EndpointInfo,
    latest_cold_readings,
    load_endpoints,
    load_samples,
    rtt_to_regions,
)
from planner.compare.figures import (
    PHASES,
    CostBasis,
    EndpointMetrics,
    endpoint_metrics,
    hourly_profile,
    measured,
)
from planner.compare.ranking import RANKING_RULE, TARGETS_RULE, Ranked, decision_table, pairwise, rank
from planner.compare.regions import ServingRegion, serving_regions
from planner.endpoints.samples import DEFINITION
from planner.sources.by_endpoint import ProductionTtft, production_by_endpoint
from planner.worksheet.budget import Worksheet

__all__ = ["Comparison", "compare", "day_range_ms", "format_window", "method_lines", "metrics_table"]


@dataclass(frozen=True)
class Comparison:
    """Everything the Compare page and the report show, computed once."""

    endpoints: list[EndpointInfo]
    samples: pd.DataFrame
    hourly: pd.DataFrame
    metrics: list[EndpointMetrics]
    ranked: list[Ranked]
    differences: list[Difference]
    since_ms: int | None
    until_ms: int | None
    vantage: str | None
    tz: str
    worksheet: Worksheet
    cost: CostBasis
    generated_at_ms: int
    n_boot: int = DEFAULT_N_BOOT
    seed: int = DEFAULT_SEED
    ttft_ms: dict[str, np.ndarray] = field(default_factory=dict)
    p95_intervals: dict[str, Interval] = field(default_factory=dict)
    margin: Margin = DEFAULT_MARGIN
    serving: dict[str, ServingRegion] = field(default_factory=dict)  # endpoint name → catalog region it serves from
    # endpoint name → your users' TTFT there over the window, from live sources (None: no source maps to it)
    production: dict[str, ProductionTtft | None] = field(default_factory=dict)

    @property
    def decision(self) -> pd.DataFrame:
        return decision_table(self.ranked)

    @property
    def window(self) -> str:
        return format_window(self.since_ms, self.until_ms, self.samples, self.tz)


def _utc(ms: int, tz: str = "UTC") -> str:
    """An epoch-ms instant in `tz`, the zone named: '2026-11-30 14:05 Europe/Berlin'."""
    zone = "UTC" if tz == "UTC" else tz
    return dt.datetime.fromtimestamp(ms / 1000, tz=ZoneInfo(tz)).strftime("%Y-%m-%d %H:%M") + f" {zone}"


def day_range_ms(first: dt.date, last: dt.date, tz: str = "UTC") -> tuple[int, int]:
    """[since_ms, until_ms) covering whole days first..last (inclusive) in time zone `tz`.

    Raises ValueError when last is before first.
    """
    if last < first:
        raise ValueError(f"the date range ends ({last}) before it starts ({first})")
    zone = ZoneInfo(tz)
    start = dt.datetime.combine(first, dt.time(), tzinfo=zone)
    end = dt.datetime.combine(last + dt.timedelta(days=1), dt.time(), tzinfo=zone)
    return int(start.timestamp() * 1000), int(end.timestamp() * 1000)


def format_window(
    since_ms: int | None,
    until_ms: int | None,
    samples: pd.DataFrame | None = None,
    tz: str = "UTC",
    *,
    now_ms: int | None = None,
) -> str:
    """'2026-11-27 00:00 UTC → 2026-11-30 00:00 UTC' (in time zone `tz`), using the samples' span for an open end;
    an end still ahead of `now_ms` (today's range ends at tomorrow's midnight) reads 'now'."""
    lo, hi = since_ms, until_ms
    if samples is not None and not samples.empty:
        lo = lo if lo is not None else int(samples["started_at_ms"].min())
        hi = hi if hi is not None else int(samples["started_at_ms"].max())
    if lo is None and hi is None:
        return "all time (no samples)"
    now = int(time.time() * 1000) if now_ms is None else now_ms
    end = "now" if hi is None or hi > now else _utc(hi, tz)
    return f"{_utc(lo, tz) if lo is not None else 'start'} → {end}"


def compare(
    engine: Engine,
    names: Sequence[str],
    *,
    since_ms: int | None = None,
    until_ms: int | None = None,
    vantage: str | None = None,
    tz: str = "UTC",
    worksheet: Worksheet | None = None,
    cost: CostBasis | None = None,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
    now_ms: int | None = None,
    margin: Margin = DEFAULT_MARGIN,
) -> Comparison:
    """Compare the named endpoints over [since_ms, until_ms) from `vantage` (None: all vantages).

    Raises planner.compare.data.UnknownEndpoint for names not in the registry,
    ValueError for an empty list or since ≥ until, zoneinfo.ZoneInfoNotFoundError
    for an unknown tz, and planner.worksheet.budget.BudgetError for an invalid worksheet. `margin` is the
    practical-equivalence margin the differences are judged against (planner.compare.bootstrap.Margin).
    Each endpoint's figures come only from its own rows (samples, hours, cold reading, RTT to its region).
    """
    if since_ms is not None and until_ms is not None and since_ms >= until_ms:
        raise ValueError(f"the start of the date range ({_utc(since_ms)}) must be before its end ({_utc(until_ms)})")
    worksheet = worksheet or Worksheet()
    cost = cost or CostBasis()
    endpoints = load_endpoints(engine, names)
    samples = load_samples(engine, endpoints, since_ms=since_ms, until_ms=until_ms, vantage=vantage)
    hourly = hourly_profile(samples, tz)
    cold = latest_cold_readings(engine, endpoints, vantage=vantage)
    # an endpoint's region may be one of the team's own RTT targets rather than a catalog region
    own_targets = rtt_to_regions(engine, [e.region for e in endpoints], vantage=vantage)
    serving = serving_regions(endpoints, measured=set(own_targets))
    rtt = rtt_to_regions(engine, [s.region_id for s in serving.values()], vantage=vantage)
    window = format_window(since_ms, until_ms, samples, tz)
    metrics = [
        endpoint_metrics(
            e,
            samples[samples["endpoint"] == e.name],
            hourly[hourly["endpoint"] == e.name],
            worksheet=worksheet,
            cold=cold.get(e.name),
            rtt=rtt.get(serving[e.name].region_id),
            cost=cost,
            window=window,
        )
        for e in endpoints
    ]
    ok = measured(samples)
    ttft = {e.name: ok.loc[ok["endpoint"] == e.name, "ttft_ms"].to_numpy(dtype=float) for e in endpoints}
    boots = Bootstraps(ttft, 0.95, n_boot=n_boot, seed=seed, margin=margin)
    ranked = rank(metrics, boots)
    diffs = pairwise([r.metrics.name for r in ranked], boots)
    intervals = {name: boots.interval(name) for name in ttft}
    production = production_by_endpoint(engine, [e.name for e in endpoints], since_ms, until_ms)
    return Comparison(
        endpoints,
        samples,
        hourly,
        metrics,
        ranked,
        diffs,
        since_ms,
        until_ms,
        vantage,
        tz,
        worksheet,
        cost,
        now_ms if now_ms is not None else int(time.time() * 1000),
        n_boot,
        seed,
        ttft,
        intervals,
        margin,
        serving,
        production,
    )


def metrics_table(cmp: Comparison) -> pd.DataFrame:
    """Per-endpoint figures as a frame (best first); columns carry units; *_reliable flags say what to grey."""
    rows = []
    for r in cmp.ranked:
        m = r.metrics
        row: dict[str, object] = {"endpoint": m.name, "provider": m.endpoint.provider, "region": m.endpoint.region}
        for key in ("p50", "p95", "p99"):
            row[f"ttft_{key}_ms"] = m.ttft[key].value
            row[f"ttft_{key}_reliable"] = m.ttft[key].reliable
        row["n"] = m.n_ok
        row["first_content_p50_ms"] = m.first_content["p50"].value
        row["first_content_p95_ms"] = m.first_content["p95"].value
        row["first_content_p95_reliable"] = m.first_content["p95"].reliable
        row["error_rate"] = m.error_rate
        row["retry_rate"] = m.retry_rate
        row["n_attempted"] = m.n_attempted
        row["queue_excess_ms"] = m.queue_ms
        row["cold_ttft_ms"] = None if m.cold is None else m.cold.cold_ms
        row["cold_minus_warm_ms"] = None if m.cold is None else m.cold.segment_ms
        row["rtt_median_ms"] = None if m.rtt is None else m.rtt.median_ms
        row["monthly_cost_usd"] = m.monthly_cost_usd
        prod = cmp.production.get(m.name)
        row["production_p95_ms"] = None if prod is None else prod.p95.value
        row["production_n"] = 0 if prod is None else prod.n
        for col in PHASES:
            row[f"{col.removesuffix('_ms')}_p50_ms"] = m.phases_p50_ms[col]
        rows.append(row)
    return pd.DataFrame(rows)


def method_lines(cmp: Comparison) -> list[str]:
    """The method section: what was measured, how, from where, n, dates, percentile method."""
    n_total = int(sum(m.n_ok for m in cmp.metrics))
    per = ", ".join(f"{m.name} n={m.n_ok} ({m.n_attempted} attempted)" for m in cmp.metrics)
    vantage = (
        "all vantages"
        if cmp.vantage is None
        else (f"vantage “{cmp.vantage}”" if cmp.vantage else "the unlabelled vantage")
    )
    return [
        "What: time to first token (TTFT) of one streaming request per sample — the first token of any kind "
        "(content, reasoning or tool call) — plus the time to first visible content, each in ms from just before "
        "the request was sent; phase timings (DNS, connect, TLS, headers, first event) from the same clock.",
        f"Which samples: {DEFINITION} The same definition as the Probes page, so n agrees between them.",
        f"From where: {vantage}. Window: {cmp.window}. Samples: {n_total} in total ({per}).",
        "Percentiles: nearest-rank (rank = ceil(p·n), no interpolation), always with n; a p95 needs n ≥ 20 and a "
        "p99 n ≥ 100, below that it is shown greyed. Hour-of-day curves bucket by hour in "
        f"{cmp.tz}; an hour's p95 counts from n ≥ 20.",
        f"Ranking: {RANKING_RULE}",
        f"Targets: {TARGETS_RULE}",
        f"Differences: percentile bootstrap, {cmp.n_boot} resamples per endpoint, seed {cmp.seed}, 95% interval on "
        "the p95 and on the difference of two p95s, judged against a practical-equivalence margin of "
        f"{cmp.margin.describe()}: “practically equivalent” when the whole interval lies inside ±margin, “X is "
        "faster” only when it lies wholly beyond it, otherwise the data cannot yet tell.",
        "Worksheet verdicts: the worksheet’s targets, prefill rate, p95 prompt and cache hit; each segment is the "
        "endpoint’s own measurement where it has one — queueing from its own hours (worst hour’s p95 − quietest "
        "hour’s p50, possibly the same hour, at least two hours with n ≥ 20), cold start from its own latest cold "
        "reading (cold − warm), network from the RTT median to its own region — else the worksheet’s typed value "
        "(labelled “entered by hand”); a figure the worksheet measured elsewhere is never borrowed: the segment is "
        "missing and the endpoint gets no verdict. Goodput = share of attempted samples that succeeded within the "
        "target.",
        "Production p95: the TTFT of your users' own requests to each endpoint in the same window, from every live "
        "source whose stored API base is the endpoint's base URL and whose model is its model (nearest rank, with "
        "n); “—” where no source maps to the endpoint.",
        f"Cost: {cmp.cost.tokens_per_month:,.0f} tokens a month at each endpoint's blended price per 1M tokens "
        f"({cmp.cost.source}).",
        f"Generated {_utc(cmp.generated_at_ms, cmp.tz)}.",
    ]
