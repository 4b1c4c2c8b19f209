"""OpenTelemetry's GenAI TTFT histogram, read from OTLP metric exports into production hours (issue 32).

The semantic conventions' `gen_ai.server.time_to_first_token`: an explicit-bucket histogram, unit "s" (or "ms", read
as such; another unit, or none, is rejected), the model in `gen_ai.response.model` or `gen_ai.request.model`. Each
point adds its bucket counts to the hour its `timeUnixNano` falls in, for its model and for every model together
(model ""; a point without a model adds to that one only). An hour keeps its summed buckets (bounds in ms), requests
(the total count) and TTFT p50/p95, recomputed at each merge by Prometheus' rule (`histogram_quantile`), so an hour
from these metrics and one from Prometheus mean the same.

Temporality: a DELTA point adds its counts. A CUMULATIVE point adds what its series (metric, unit, resource, scope
and point attributes) gained since the series' last point, kept in the store (store/otlp_metrics.py), so neither a
re-sent export nor a receiver restart counts twice. A series seen first adds all its counts (to the point's hour); a
point no later than its series' last (same start), or from before the series' start, adds nothing; a reset (the
start changes, a count goes down, the bounds change) adds the new counts whole. A DELTA export re-sent after it was
stored (its answer lost) is counted again: OTLP is at-least-once.

Bucket bounds: a point with other bounds than its hour's is added on the bounds both share — each histogram's buckets
summed into the coarser common ones: exact (no count split or guessed), at the coarser resolution. A point whose
bounds share no finite bound with its hour's (for its model or for every model) is rejected whole. So are points
that cannot be read (no buckets, a count that does not add up, another unit, an exponential histogram, no
temporality, a value of the wrong type or nested too deeply), with a reason, and so is each entry at any level of
the export that is not an object (planner.logs.otlp_walk: one rejection each); the rest are stored, and other
metrics ignored.
"""

from __future__ import annotations

import bisect
import datetime as dt
import hashlib
import itertools
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Engine

from planner.logs.otlp_walk import Refusals, attributes, entries, shown, storable
from planner.logs.records import MAX_EPOCH_MS, Reject
from planner.store.otlp_metrics import HourKey, HourState, MetricPlan, SeriesState, merge_metric_export
from planner.store.sources import HOUR_MS

__all__ = [
    "TTFT_METRIC",
    "Buckets",
    "TtftPoint",
    "add_buckets",
    "gained",
    "histogram_quantile",
    "store_ttft_points",
    "ttft_points",
]

TTFT_METRIC = "gen_ai.server.time_to_first_token"
_MODEL_KEYS = ("gen_ai.response.model", "gen_ai.request.model")
_MS_PER_UNIT = {"s": 1000.0, "ms": 1.0}
_NO_RECORDED_VALUE = 1  # DataPointFlags: the series had no value here (a staleness marker), not a reading
_MAX_NS = MAX_EPOCH_MS * 1_000_000
#: AggregationTemporality (OTLP JSON's number, or the name MessageToDict gives) → cumulative?
_CUMULATIVE: dict[int | str, bool] = {
    1: False,
    2: True,
    "AGGREGATION_TEMPORALITY_DELTA": False,
    "AGGREGATION_TEMPORALITY_CUMULATIVE": True,
}


@dataclass(frozen=True)
class Buckets:
    """An explicit-bucket histogram: finite upper bounds (ms, increasing) and one count more than bounds (the last
    bucket is (highest bound, +Inf]); each bucket is (previous bound, bound], as Prometheus' `le`."""

    bounds_ms: tuple[float, ...]
    counts: tuple[int, ...]

    @property
    def total(self) -> int:
        return sum(self.counts)

    def to_json(self) -> str:
        return json.dumps({"bounds_ms": list(self.bounds_ms), "counts": list(self.counts)})

    @classmethod
    def from_json(cls, text: str) -> Buckets:
        got = json.loads(text)
        return cls(tuple(float(b) for b in got["bounds_ms"]), tuple(int(c) for c in got["counts"]))


@dataclass(frozen=True)
class TtftPoint:
    """One readable data point of the TTFT histogram."""

    series_key: str  # sha256 (hex) of metric, unit, resource, scope and point attributes
    model: str  # "" when the point names none
    start_ns: int  # startTimeUnixNano (0: not given)
    time_ns: int  # timeUnixNano: the point's hour
    cumulative: bool
    buckets: Buckets

    @property
    def hour_start_ms(self) -> int:
        ms = self.time_ns // 1_000_000
        return ms - ms % HOUR_MS


def histogram_quantile(q: float, bounds: Sequence[float], counts: Sequence[int | float]) -> float | None:
    """Prometheus' histogram_quantile over explicit buckets (counts per bucket, the last one (max bound, +Inf]);
    None where Prometheus gives NaN (no observations, no finite bound).

    The rank q·n falls in the first bucket whose cumulative count reaches it; the value is interpolated linearly
    inside that bucket (the first bucket starts at 0, unless its bound is ≤ 0: then that bound); a rank past every
    finite bucket gives the highest finite bound."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"a quantile is in [0, 1], not {q}")
    if len(counts) != len(bounds) + 1:
        raise ValueError(f"{len(bounds)} bounds need {len(bounds) + 1} counts, not {len(counts)}")
    if not bounds:
        return None
    cumulative = list(itertools.accumulate(float(c) for c in counts))
    n = cumulative[-1]
    if n <= 0:
        return None
    rank = q * n
    b = next((i for i in range(len(bounds)) if cumulative[i] >= rank), len(bounds))
    if b == len(bounds):
        return float(bounds[-1])
    if b == 0 and bounds[0] <= 0:
        return float(bounds[0])
    start, count = 0.0, cumulative[b]
    if b > 0:
        start = bounds[b - 1]
        count -= cumulative[b - 1]
        rank -= cumulative[b - 1]
    if count == 0:  # q = 0 on an empty first bucket: Prometheus' 0/0
        return None
    return float(start + (bounds[b] - start) * (rank / count))


def _coarsen(h: Buckets, onto: tuple[float, ...]) -> tuple[int, ...]:
    """h's counts summed into the buckets of `onto` (a subset of h's bounds): exact, each bucket of h lies whole in
    one of them."""
    out = [0] * (len(onto) + 1)
    for i, c in enumerate(h.counts):
        out[bisect.bisect_left(onto, h.bounds_ms[i]) if i < len(h.bounds_ms) else len(onto)] += c
    return tuple(out)


def add_buckets(a: Buckets | None, b: Buckets) -> Buckets | None:
    """a + b, on the bounds they share when theirs differ; None when they share no finite bound."""
    if a is None:
        return b
    if a.bounds_ms == b.bounds_ms:
        return Buckets(a.bounds_ms, tuple(x + y for x, y in zip(a.counts, b.counts, strict=True)))
    common = tuple(sorted(set(a.bounds_ms) & set(b.bounds_ms)))
    if not common:
        return None
    return Buckets(common, tuple(x + y for x, y in zip(_coarsen(a, common), _coarsen(b, common), strict=True)))


def gained(last: SeriesState | None, point: TtftPoint) -> Buckets | None:
    """What a cumulative point adds after its series' last point (None: nothing, the point is a repeat or older)."""
    if last is None or point.start_ns > last.start_ns:
        return point.buckets  # first seen, or a new start: a reset
    if point.start_ns < last.start_ns or point.time_ns <= last.time_ns:
        return None
    before = Buckets.from_json(last.buckets_json)
    if before.bounds_ms != point.buckets.bounds_ms or any(
        now < then for now, then in zip(point.buckets.counts, before.counts, strict=True)
    ):
        return point.buckets  # other bounds, or a count went down: a reset
    return Buckets(
        point.buckets.bounds_ms, tuple(n - t for n, t in zip(point.buckets.counts, before.counts, strict=True))
    )


def _whole(value: Any) -> int | None:
    """A whole number from JSON (an int, or its digits as OTLP JSON writes 64-bit ints), else None."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 20:
        return int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _ns(value: Any, field: str, required: bool) -> int:
    if value is None or value == "" or value == 0:
        if required:
            raise Reject(f"no {field}")
        return 0
    ns = _whole(value)
    if ns is None or not 0 < ns < _MAX_NS:
        raise Reject(f"{field} is not a time from 1970 to 2100 in ns: {shown(value)}")
    return ns


def _count(value: Any, field: str) -> int:
    n = _whole(value)
    if n is None or n < 0:
        raise Reject(f"{field} holds {shown(value)}, not a count")
    return n


def _bounds(raw: list[Any], ms_per_unit: float) -> tuple[float, ...]:
    out: list[float] = []
    for v in raw:
        try:
            b = float(v) if isinstance(v, int | float | str) and not isinstance(v, bool) else math.nan
        except (ValueError, OverflowError):
            b = math.nan
        if math.isnan(b):
            raise Reject(f"explicitBounds holds {shown(v)}, not a number")
        ms = round(b * ms_per_unit, 6)  # to the ns: the same bounds in s and in ms compare equal
        if not math.isfinite(ms) or (out and ms <= out[-1]):
            raise Reject("explicitBounds are not finite and increasing")
        out.append(ms)
    return tuple(out)


def _point(p: Mapping[str, Any], ms_per_unit: float, cumulative: bool, identity: list[Any]) -> TtftPoint | None:
    flags = p.get("flags", 0)
    if isinstance(flags, int) and flags & _NO_RECORDED_VALUE:
        return None
    time_ns = _ns(p.get("timeUnixNano"), "timeUnixNano", required=True)
    start_ns = _ns(p.get("startTimeUnixNano"), "startTimeUnixNano", required=False)
    if start_ns > time_ns:
        raise Reject("startTimeUnixNano is after timeUnixNano")
    raw_counts, raw_bounds = p.get("bucketCounts") or [], p.get("explicitBounds") or []
    if not isinstance(raw_counts, list) or not isinstance(raw_bounds, list):
        raise Reject("bucketCounts and explicitBounds must be lists")
    if not raw_counts or not raw_bounds:
        raise Reject("no buckets (bucketCounts and explicitBounds): a percentile needs them")
    if len(raw_counts) != len(raw_bounds) + 1:
        raise Reject(f"{len(raw_bounds)} explicitBounds need {len(raw_bounds) + 1} bucketCounts, not {len(raw_counts)}")
    counts = tuple(_count(c, "bucketCounts") for c in raw_counts)
    if p.get("count") is not None and _count(p["count"], "count") != sum(counts):
        raise Reject(f"count {p['count']} is not the sum of bucketCounts ({sum(counts)})")
    attrs = attributes(p.get("attributes"))
    model = next((str(attrs[k]) for k in _MODEL_KEYS if attrs.get(k) not in (None, "")), "")
    model = storable(model, 200)
    key = hashlib.sha256(json.dumps([*identity, sorted(attrs.items())], sort_keys=True, default=str).encode())
    buckets = Buckets(_bounds(raw_bounds, ms_per_unit), counts)
    return TtftPoint(key.hexdigest(), model, start_ns, time_ns, cumulative, buckets)


def _metric_points(metric: Mapping[str, Any], identity: list[Any], where: str, rejected: Refusals) -> list[TtftPoint]:
    """The metric's readable points; each other one, and each entry that is no point, added to `rejected`."""
    kind = next((k for k in ("histogram", "exponentialHistogram", "sum", "gauge", "summary") if k in metric), None)
    if kind is None or metric[kind] is None:
        return []
    data = metric[kind]
    if not isinstance(data, dict):
        rejected.add(f"{TTFT_METRIC} at {where}: {kind} is {shown(data)}, not an object")
        return []
    raw = entries(data, ("dataPoints",), f"{where}.{kind}")
    unit = metric.get("unit", "")
    why = None
    if kind != "histogram":
        why = f"a {kind}, not an explicit-bucket histogram"
    elif not isinstance(unit, str) or unit not in _MS_PER_UNIT:
        why = f"unit {shown(unit)} is neither 's' nor 'ms'"
    temporality = data.get("aggregationTemporality")
    cumulative = _CUMULATIVE.get(temporality) if isinstance(temporality, int | str) else None
    if why is None and cumulative is None:
        why = f"aggregationTemporality {shown(temporality)} is neither delta nor cumulative"
    if why is not None or cumulative is None:
        rejected.extend(f"{TTFT_METRIC}: {p if isinstance(p, Reject) else why}" for _, p in raw)
        return []
    points = []
    for i, (place, p) in enumerate(raw):
        if isinstance(p, Reject):
            rejected.add(f"{TTFT_METRIC}: {p}")
            continue
        try:
            got = _point(p, _MS_PER_UNIT[unit], cumulative, [*identity, unit])
        except Reject as exc:
            rejected.add(f"{TTFT_METRIC} point {i}: {exc}")
            continue
        except RecursionError:  # an attribute nested thousands deep: a hostile body, not a crash
            rejected.add(f"{TTFT_METRIC} point {i} at {place}: nested too deeply to be a data point")
            continue
        if got is not None:
            points.append(got)
    return points


def _scope_id(sm: Mapping[str, Any]) -> list[Any]:
    scope = sm.get("scope") or sm.get("instrumentationLibrary") or {}
    if isinstance(scope, dict):
        return [scope.get("name"), scope.get("version")]
    return [str(scope) if isinstance(scope, str | int | float) else shown(scope)]


def ttft_points(export: Mapping[str, Any]) -> tuple[list[TtftPoint], Refusals]:
    """The TTFT histogram's data points of one export (OTLP JSON's dict shape), and a reason for each point of that
    metric that cannot be read and for each entry at any level that is not an object (one each); other metrics are
    left out."""
    points: list[TtftPoint] = []
    rejected = Refusals()
    for rm_place, rm in entries(export, ("resourceMetrics",)):
        if isinstance(rm, Reject):
            rejected.add(str(rm))
            continue
        res = rm.get("resource")
        try:
            resource = sorted(attributes(res.get("attributes") if isinstance(res, dict) else None).items())
        except Reject as exc:
            rejected.add(f"{rm_place}.resource: {exc}")
            continue
        for sm_place, sm in entries(rm, ("scopeMetrics", "instrumentationLibraryMetrics"), rm_place):
            if isinstance(sm, Reject):
                rejected.add(str(sm))
                continue
            scope_id = _scope_id(sm)
            for place, metric in entries(sm, ("metrics",), sm_place):
                if isinstance(metric, Reject):
                    rejected.add(str(metric))
                elif metric.get("name") == TTFT_METRIC:
                    points += _metric_points(metric, [TTFT_METRIC, resource, scope_id], place, rejected)
    return points, rejected


def _summary(h: Buckets) -> HourState:
    p50, p95 = (histogram_quantile(q, h.bounds_ms, h.counts) for q in (0.5, 0.95))
    return HourState(h.to_json(), float(h.total), p50, p95)


def _when(point: TtftPoint) -> str:
    return dt.datetime.fromtimestamp(point.time_ns / 1e9, dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _clash(p: TtftPoint, gain: Buckets, hour: HourKey, stored: Buckets | None) -> str:
    """Why a point was not added to its hour."""
    head = f"{TTFT_METRIC} point at {_when(p)} ({p.model or 'no model'})"
    whose = hour[1] or "every model"
    if stored is None:
        return f"{head}: the hour for {whose} holds figures without buckets to add to"
    return (
        f"{head}: its bucket bounds (ms) {list(gain.bounds_ms)[:8]} share none with the hour's for {whose} "
        f"{list(stored.bounds_ms)[:8]}"
    )


def _plan(points: Iterable[TtftPoint], rejected: Refusals) -> MetricPlan:
    """The merge of `points` as the store runs it: series states and hours in, what to write out; each point that
    cannot be added is named in `rejected`."""
    ordered = sorted(points, key=lambda p: p.time_ns)  # a series' points in order: each gains on the one before

    def plan(
        series: Mapping[str, SeriesState], hours: Mapping[HourKey, HourState]
    ) -> tuple[Mapping[str, SeriesState], Mapping[HourKey, HourState]]:
        states = dict(series)
        sums: dict[HourKey, Buckets | None] = {
            k: Buckets.from_json(h.buckets_json) if h.buckets_json else None for k, h in hours.items()
        }
        blocked = {k for k, h in hours.items() if not h.buckets_json and h.requests > 0}  # figures without buckets
        new_series: dict[str, SeriesState] = {}
        changed: set[HourKey] = set()
        for p in ordered:
            gain = gained(states.get(p.series_key), p) if p.cumulative else p.buckets
            if gain is None:
                continue
            if p.cumulative:
                states[p.series_key] = new_series[p.series_key] = SeriesState(
                    p.start_ns, p.time_ns, p.buckets.to_json()
                )
            if gain.total == 0:
                continue
            keys = [(p.hour_start_ms, "")] + ([(p.hour_start_ms, p.model)] if p.model else [])
            merged = {k: None if k in blocked else add_buckets(sums.get(k), gain) for k in keys}
            clash = next((k for k, m in merged.items() if m is None), None)
            if clash is not None:
                rejected.add(_clash(p, gain, clash, sums.get(clash)))
                continue
            for k, m in merged.items():
                sums[k] = m
                changed.add(k)
        out: dict[HourKey, HourState] = {}
        for k in changed:
            h = sums[k]
            assert h is not None  # set from a merge above
            out[k] = _summary(h)
        return new_series, out

    return plan


def store_ttft_points(
    engine: Engine, source_id: int, points: Sequence[TtftPoint], rejected: Refusals | None = None
) -> Refusals:
    """Add the points to the source's hours (and their series' states), in one transaction; returns `rejected`
    (new when None) with a reason added for each point that could not be added (its bounds share none with its
    hour's)."""
    rejected = Refusals() if rejected is None else rejected
    if not points:
        return rejected
    series_keys = {p.series_key for p in points if p.cumulative}
    hour_keys = {(p.hour_start_ms, m) for p in points for m in {"", p.model}}
    merge_metric_export(engine, source_id, series_keys, hour_keys, _plan(points, rejected))
    return rejected
