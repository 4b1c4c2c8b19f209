"""A 57-minute trace in the Azure 2023 layout (TIMESTAMP, ContextTokens, GeneratedTokens: no cache column), as a new
user uploads one: it runs 18:15–19:12 UTC on Thursday 2023-11-16, so no request falls in the 09:00–18:00 working day
in UTC, and its busiest clock hour (18:00–19:00, 270 requests) is only partly in the log."""

from __future__ import annotations

__all__ = ["BUSIEST_HOUR_REQUESTS", "N_REQUESTS", "SPAN_MIN", "short_trace_csv"]

BUSIEST_HOUR_REQUESTS = 270  # 18:15:00–18:59:50, one every 10 s
N_REQUESTS = BUSIEST_HOUR_REQUESTS + 37  # then 19:00:00–19:12:00, one every 20 s
SPAN_MIN = 57


def short_trace_csv() -> bytes:
    """The trace as CSV bytes."""
    stamps = [f"2023-11-16 18:{15 + s // 60:02d}:{s % 60:02d}.000" for s in range(0, 45 * 60, 10)]
    stamps += [f"2023-11-16 19:{s // 60:02d}:{s % 60:02d}.000" for s in range(0, 12 * 60 + 1, 20)]
    assert len(stamps) == N_REQUESTS
    rows = [f"{t},{100 + 37 * i % 900},{10 + i % 7}" for i, t in enumerate(stamps)]
    return ("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "\n".join(rows) + "\n").encode()
