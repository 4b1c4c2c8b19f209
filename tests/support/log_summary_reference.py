"""An independent log summary: every figure of LogSummary.to_dict computed in plain Python, one request at a time.

The product computes the summary once, in DuckDB (planner.logs.summary_sql). This is the truth the tests hold it to:
nearest rank as ceil(p·n) in exact fractions over sorted lists, each arrival's local clock from its own zoneinfo
offset, the busiest clock hour by counting, the cold-start replay request by request. Slow and obvious on purpose;
meant for a few thousand requests.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from fractions import Fraction
from typing import Any
from zoneinfo import ZoneInfo

from planner.logs.exposure import DEFAULT_WINDOWS_S
from planner.percentiles import Percentile

__all__ = ["reference_summary", "same"]

_PS = (0.5, 0.9, 0.95, 0.99)
_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def _rank_value(values: list, p: float):
    """The nearest-rank p-quantile of `values` (None for none): the ceil(p·n)-th smallest, at least the first."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(Fraction(str(p)) * len(ordered)))
    return float(ordered[rank - 1])


def _pcs(values: list, ps: tuple[float, ...] = _PS) -> dict[str, dict[str, Any]]:
    out = {}
    for p in (*ps, 1.0):
        pc = Percentile(p=p, value=_rank_value(values, p), n=len(values))
        out["max" if p == 1.0 else pc.label] = {"value": pc.value, "n": pc.n, "reliable": pc.reliable}
    return out


def _local_ms(ts_ms: int, zone: ZoneInfo | dt.timezone) -> int:
    """Local wall-clock ms of a UTC epoch ms, by the zone's own offset at that instant (zoneinfo)."""
    at = dt.datetime.fromtimestamp(ts_ms // 1000, dt.UTC).astimezone(zone)
    offset = at.utcoffset()
    assert offset is not None
    return ts_ms + round(offset.total_seconds() * 1000)


def _workday(text: str) -> tuple[int, int]:
    start, end = text.split("-")
    (h1, m1), (h2, m2) = (map(int, start.split(":")), map(int, end.split(":")))
    return h1 * 60 + m1, h2 * 60 + m2


def reference_summary(
    frame, tz: str = "UTC", workday: str = "09:00-18:00", windows_s: tuple[float, ...] = DEFAULT_WINDOWS_S
) -> dict[str, Any]:
    """What LogSummary.to_dict() must be for the requests in `frame` (planner.logs.COLUMNS; NaN for a timing not
    logged), hours and the working day in `tz`."""
    zone = dt.UTC if tz in ("UTC", "utc") else ZoneInfo(tz)
    rows = [
        {
            "ts": int(r.ts_ms),
            "model": None if r.model is None or (isinstance(r.model, float) and math.isnan(r.model)) else str(r.model),
            "prompt": int(r.prompt_tokens),
            "cached": int(r.cached_tokens),
            "output": int(r.output_tokens),
            "ttft": None if math.isnan(float(r.ttft_ms)) else float(r.ttft_ms),
            "duration": None if math.isnan(float(r.duration_ms)) else float(r.duration_ms),
        }
        for r in frame.itertuples(index=False)
    ]
    n = len(rows)
    start_min, end_min = _workday(workday)
    for r in rows:
        local = _local_ms(r["ts"], zone)
        r["day"] = local // 86_400_000
        r["hour"] = local // 3_600_000 % 24
        r["minute_of_day"] = local // 60_000 - r["day"] * 1440
        r["dow"] = (r["day"] + 3) % 7  # 1970-01-01 was a Thursday
        r["bucket"] = local // 3_600_000
        r["hour_start"] = r["ts"] - local % 3_600_000  # when this arrival's local clock hour began (UTC ms)
    first = min(r["ts"] for r in rows)
    last = max(r["ts"] for r in rows)
    span_s = (last - first) / 1000.0
    rate = (n - 1) / span_s if n >= 2 and span_s > 0 else math.nan
    hits = sum(1 for r in rows if r["cached"] > 0)
    known = hits > 0
    prompt_sum, cached_sum = sum(r["prompt"] for r in rows), sum(r["cached"] for r in rows)

    # the busiest local clock hour: most requests, the earliest of a tie
    buckets: dict[int, list[dict]] = defaultdict(list)
    for r in rows:
        buckets[r["bucket"]].append(r)
    bucket = max(buckets, key=lambda b: (len(buckets[b]), -b))
    starts = [r["hour_start"] for r in buckets[bucket]]
    hour_start, hour_end = min(starts), max(starts) + 3_600_000
    peak_n = len(buckets[bucket])

    first_day, last_day = min(r["day"] for r in rows), max(r["day"] for r in rows)
    days = last_day - first_day + 1
    hourly, prompt_by_hour, ttft_by_hour = [], [], []
    for hour in range(24):
        at = [r for r in rows if r["hour"] == hour]
        requests = len(at) / days
        prompt_h = float(sum(r["prompt"] for r in at)) / days
        output_h = float(sum(r["output"] for r in at)) / days
        hourly.append(
            {
                "hour": hour,
                "requests": requests,
                "requests_per_s": requests / 3600.0,
                "prompt_tokens": prompt_h,
                "cached_tokens": float(sum(r["cached"] for r in at)) / days,
                "output_tokens": output_h,
                "tokens_per_hour": prompt_h + output_h,
            }
        )
        for table, key in ((prompt_by_hour, "prompt"), (ttft_by_hour, "ttft")):
            values = [r[key] for r in at if r[key] is not None]
            p95 = Percentile(p=0.95, value=_rank_value(values, 0.95), n=len(values))
            table.append(
                {
                    "hour": hour,
                    "n": len(values),
                    "p50": _rank_value(values, 0.5),
                    "p95": p95.value,
                    "p95_reliable": p95.reliable,
                }
            )

    occurrences = [0] * 7
    for day in range(first_day, last_day + 1):
        occurrences[(day + 3) % 7] += 1
    weekdays = []
    for dow in range(7):
        on = [r for r in rows if r["dow"] == dow]
        times = occurrences[dow]
        weekdays.append(
            {
                "weekday": dow,
                "name": _WEEKDAYS[dow],
                "requests": len(on) / times if times else 0.0,
                "prompt_tokens": float(sum(r["prompt"] for r in on)) / times if times else 0.0,
                "output_tokens": float(sum(r["output"] for r in on)) / times if times else 0.0,
            }
        )

    models = []
    for model in sorted({r["model"] for r in rows}, key=lambda m: (m is None, m or "")):
        of = [r for r in rows if r["model"] == model]
        prompts = [r["prompt"] for r in of]
        p95 = Percentile(p=0.95, value=_rank_value(prompts, 0.95), n=len(of))
        m_prompt = sum(prompts)
        models.append(
            {
                "model": model or "(unnamed)",
                "n": len(of),
                "prompt_tokens_p50": _rank_value(prompts, 0.5),
                "prompt_tokens_p95": p95.value,
                "p95_reliable": p95.reliable,
                "cached_token_fraction": sum(r["cached"] for r in of) / m_prompt if known and m_prompt else None,
                "output_tokens_mean": sum(r["output"] for r in of) / len(of),
            }
        )

    # one scale-to-zero replica, request by request in arrival order: busy until the latest finish so far
    replay = sorted(rows, key=lambda r: r["ts"])
    gaps, busy = [], None
    for r in replay:
        if busy is not None:
            gaps.append(r["ts"] - busy)
        finish = float(r["ts"]) + (r["duration"] or 0.0)
        busy = finish if busy is None else max(busy, finish)
    cold = [
        {
            "window_s": float(w),
            "trace_cold_fraction": (1 + sum(1 for g in gaps if g > w * 1000.0)) / n,
            "poisson_cold_fraction": math.exp(-rate * w) if math.isfinite(rate) else None,
        }
        for w in windows_s
    ]

    if start_min < end_min:
        in_workday = [r["prompt"] for r in rows if r["dow"] < 5 and start_min <= r["minute_of_day"] < end_min]
    else:  # overnight: the evening of a weekday, and the next morning (Tuesday to Saturday)
        in_workday = [
            r["prompt"]
            for r in rows
            if (r["dow"] < 5 and r["minute_of_day"] >= start_min)
            or (1 <= r["dow"] <= 5 and r["minute_of_day"] < end_min)
        ]
    return {
        "n": n,
        "first_ts_ms": first,
        "last_ts_ms": last,
        "tz": tz,
        "workday": workday,
        "prompt_tokens": _pcs([r["prompt"] for r in rows]),
        "prompt_tokens_workday": _pcs(in_workday),
        "output_tokens": _pcs([r["output"] for r in rows]),
        "ttft_ms": _pcs([r["ttft"] for r in rows if r["ttft"] is not None]),
        "cached_share": {
            "token_fraction": cached_sum / prompt_sum if known and prompt_sum > 0 else None,
            "request_fraction": hits / n if known else None,
        },
        "mean_rate_per_s": rate,
        "peak_hour_requests": peak_n,
        "peak_hour_start_ms": hour_start,
        "peak_hour_covered_s": max(0, min(last, hour_end) - max(first, hour_start)) / 1000.0,
        "peak_hour_rate_per_s": peak_n / ((hour_end - hour_start) / 1000.0),
        "models": models,
        "hourly": hourly,
        "weekdays": weekdays,
        "prompt_tokens_by_hour": prompt_by_hour,
        "ttft_ms_by_hour": ttft_by_hour,
        "cold_exposure": cold,
    }


def same(a: Any, b: Any, where: str = "summary") -> None:
    """Assert two summaries (to_dict shapes) hold the same figures: equal keys, lengths and values, floats to 1e-12
    (NaN equal to NaN)."""
    if isinstance(a, dict):
        assert set(a) == set(b), (where, sorted(set(a) ^ set(b)))
        for k in a:
            same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        assert (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12), (where, a, b)
    else:
        assert a == b, (where, a, b)
