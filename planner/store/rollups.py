"""Raw-sample retention and hourly rollups that keep percentiles readable.

Raw samples are the source of truth for `retention_days` (default 90,
$TTFT_PLANNER_RETENTION_DAYS). Older samples are folded, per endpoint, vantage
and UTC hour, into a `probe_rollup` row — counts of ok / failed / skipped, min,
max, sum, and a log-spaced TTFT histogram with 20 buckets per decade (each
bucket ~12 % wide) — and deleted, in one transaction per chunk, so a crash
never loses or double-counts a sample. planner.store.rollup_queries reads a
histogram's samples at their bucket's upper edge: at most ~12 % above the
exact value, never below it. (uptime-kuma keeps only avg/min/max in its
rollups and cannot answer a p95 afterwards; this keeps the shape.)
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from planner import settings
from planner.inputs.validate import RETENTION_DAYS
from planner.store.database import table_of
from planner.store.probes import ProbeSampleRow
from planner.store.worker import ProbeRollupRow

__all__ = [
    "BUCKETS_PER_DECADE",
    "DEFAULT_RETENTION_DAYS",
    "RETENTION_ENV",
    "RetentionResult",
    "apply_retention",
    "bucket_index",
    "bucket_upper_ms",
    "retention_days",
]

BUCKETS_PER_DECADE = 20
DEFAULT_RETENTION_DAYS = 90.0
RETENTION_ENV = settings.RETENTION_DAYS.name
HOUR_MS = 3_600_000
_MIN_MS = 0.01

_S = table_of(ProbeSampleRow)
_R = table_of(ProbeRollupRow)


def retention_days() -> float:
    """$TTFT_PLANNER_RETENTION_DAYS (days of raw samples to keep), default 90. Checked by the rule `worker
    --retention-days` follows (planner.inputs.validate.RETENTION_DAYS): a value that is not a finite number in its range
    (inf, nan, 0, 1e308, text) raises OutOfRange (a ValueError) naming the variable."""
    raw = settings.RETENTION_DAYS.raw()
    if not raw:
        return DEFAULT_RETENTION_DAYS
    return float(RETENTION_DAYS.parse(raw, RETENTION_ENV))


def bucket_index(ttft_ms: float) -> int:
    """Histogram bucket of a TTFT: floor(20·log10(ms)); bucket i covers [10^(i/20), 10^((i+1)/20)) ms."""
    return math.floor(BUCKETS_PER_DECADE * math.log10(max(ttft_ms, _MIN_MS)))


def bucket_upper_ms(index: int) -> float:
    """Upper edge (ms) of bucket `index`."""
    return 10 ** ((index + 1) / BUCKETS_PER_DECADE)


@dataclass
class RetentionResult:
    """What apply_retention did: rollup rows written or merged, raw samples deleted, the cutoff (epoch ms)."""

    rollup_hours: int = 0
    deleted_samples: int = 0
    cutoff_ms: int = 0


def _merge_hist(old_json: str | None, new: Counter[int]) -> str:
    merged = Counter({int(k): v for k, v in json.loads(old_json).items()}) if old_json else Counter()
    merged.update(new)
    return json.dumps({str(k): merged[k] for k in sorted(merged)})


def apply_retention(
    engine: Engine, now_ms: int, days: float | None = None, *, vantage: str | None = None, chunk_hours: int = 24
) -> RetentionResult:
    """Roll up and delete raw samples older than `days` (default retention_days()), whole UTC hours only.

    With `vantage`, only that vantage's samples. Each chunk (one endpoint, up to
    `chunk_hours` hours) is folded and deleted in one transaction. Database errors propagate.
    """
    days = retention_days() if days is None else float(RETENTION_DAYS.check(days, "retention days"))
    cutoff = ((now_ms - int(days * 86_400_000)) // HOUR_MS) * HOUR_MS
    result = RetentionResult(cutoff_ms=cutoff)
    base = _S.c.started_at_ms < cutoff
    if vantage is not None:
        base = sa.and_(base, _S.c.vantage == vantage)
    with engine.connect() as conn:
        groups = conn.execute(
            sa.select(_S.c.endpoint_id, _S.c.vantage, sa.func.min(_S.c.started_at_ms))
            .where(base)
            .group_by(_S.c.endpoint_id, _S.c.vantage)
        ).all()
    for endpoint_id, vt, first_ms in groups:
        start = (first_ms // HOUR_MS) * HOUR_MS
        while start < cutoff:
            end = min(cutoff, start + chunk_hours * HOUR_MS)
            result.rollup_hours += _fold_chunk(engine, endpoint_id, vt, start, end, result)
            start = end
    return result


def _fold_chunk(engine: Engine, endpoint_id: int, vantage: str, start: int, end: int, result: RetentionResult) -> int:
    where = sa.and_(
        _S.c.endpoint_id == endpoint_id, _S.c.vantage == vantage, _S.c.started_at_ms >= start, _S.c.started_at_ms < end
    )
    hours: dict[int, dict[str, Any]] = {}
    with engine.begin() as conn:
        for started, ok, kind, ttft in conn.execute(
            sa.select(_S.c.started_at_ms, _S.c.ok, _S.c.kind, _S.c.ttft_ms).where(where)
        ):
            h = hours.setdefault(
                (started // HOUR_MS) * HOUR_MS,
                {"ok": 0, "failed": 0, "skipped": 0, "hist": Counter(), "min": None, "max": None, "sum": 0.0},
            )
            if kind in ("cold", "warm"):
                continue  # cold readings keep their figures in cold_reading; the series percentiles never held them
            if kind == "skipped":
                h["skipped"] += 1
            elif ok and ttft is not None:
                h["ok"] += 1
                h["hist"][bucket_index(ttft)] += 1
                h["min"] = ttft if h["min"] is None else min(h["min"], ttft)
                h["max"] = ttft if h["max"] is None else max(h["max"], ttft)
                h["sum"] += ttft
            else:
                h["failed"] += 1
        # The chunk's rollup rows already stored (late rows for a rolled hour merge into them), in one read; the
        # new hours in one executemany: two statements per chunk, not two per hour.
        series = sa.and_(_R.c.endpoint_id == endpoint_id, _R.c.vantage == vantage)
        stored = {
            row["hour_start_ms"]: row
            for row in conn.execute(
                sa.select(_R).where(series, _R.c.hour_start_ms >= start, _R.c.hour_start_ms < end)
            ).mappings()
        }
        fresh = []
        for hour, h in hours.items():
            old = stored.get(hour)
            if old is None:
                fresh.append(
                    {
                        "endpoint_id": endpoint_id,
                        "vantage": vantage,
                        "hour_start_ms": hour,
                        "n_ok": h["ok"],
                        "n_failed": h["failed"],
                        "n_skipped": h["skipped"],
                        "ttft_min_ms": h["min"],
                        "ttft_max_ms": h["max"],
                        "ttft_sum_ms": h["sum"],
                        "hist_json": _merge_hist(None, h["hist"]),
                    }
                )
            else:
                mins = [v for v in (old["ttft_min_ms"], h["min"]) if v is not None]
                maxs = [v for v in (old["ttft_max_ms"], h["max"]) if v is not None]
                conn.execute(
                    _R.update()
                    .where(series, _R.c.hour_start_ms == hour)
                    .values(
                        n_ok=old["n_ok"] + h["ok"],
                        n_failed=old["n_failed"] + h["failed"],
                        n_skipped=old["n_skipped"] + h["skipped"],
                        ttft_min_ms=min(mins) if mins else None,
                        ttft_max_ms=max(maxs) if maxs else None,
                        ttft_sum_ms=old["ttft_sum_ms"] + h["sum"],
                        hist_json=_merge_hist(old["hist_json"], h["hist"]),
                    )
                )
        if fresh:
            conn.execute(_R.insert(), fresh)
        deleted = conn.execute(_S.delete().where(where)).rowcount
    result.deleted_samples += deleted or 0
    return len(hours)
