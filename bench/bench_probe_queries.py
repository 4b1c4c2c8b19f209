"""Benchmark: every query behind the Probes page with 1,000,000 samples in SQLite (target < 300 ms each),
and the page's server-side render (AppTest, target < 1 s).

Data: 8 endpoints × 125,000 samples = 1,000,000 rows, one every 60 s (≈ 87 days per endpoint, i.e. a full
90-day retention window), 2 % failures, an afternoon queueing bump. The queries are run for one series over
its whole 87 days (the worst case the page allows) and over the default 7-day range.

Usage: python bench/bench_probe_queries.py [--rows 1000000] [--keep PATH]
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planner.store import open_store  # noqa: E402
from planner.store import probe_queries as pq  # noqa: E402

ENDPOINTS = 8
TARGET_QUERY_MS = 300.0
TARGET_RENDER_MS = 1000.0


def build(path: Path, rows: int) -> None:
    engine = open_store(f"sqlite:///{path}")
    engine.dispose()
    per = rows // ENDPOINTS
    now_ms = int(time.time() * 1000) // 60_000 * 60_000
    start = now_ms - per * 60_000
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=OFF")
    t = int(time.time() * 1000)
    for e in range(1, ENDPOINTS + 1):
        con.execute(
            "INSERT INTO endpoint (id, name, provider, region, protocol, base_url, model, api_key_env, interval_s,"
            " timeout_s, prompt_tokens, max_tokens, connection_policy, enabled, vantage, simulated, created_at_ms,"
            " updated_at_ms) VALUES (?, ?, '', '', 'openai-chat', 'http://127.0.0.1:1/v1', 'm', '', 60, 30, 1000,"
            " 64, 'fresh', 0, '', 0, ?, ?)",
            (e, f"bench-{e}", t, t),
        )
    cols = (
        "endpoint_id, vantage, kind, scheduled_at_ms, started_at_ms, ok, error_class, attempts, retry_wait_ms, "
        "conn_reused, buffered, cached_series, dns_ms, connect_ms, "
        "headers_ms, first_event_ms, ttft_ms, first_content_ms, total_ms"
    )
    sql = f"INSERT INTO probe_sample ({cols}) VALUES ({', '.join('?' * 19)})"
    rng = random.Random(1)
    for e in range(1, ENDPOINTS + 1):
        batch = []
        for k in range(per):
            ts = start + k * 60_000 + (e * 997) % 60_000
            hour = (ts // 3_600_000) % 24
            if rng.random() < 0.02:
                batch.append(
                    (
                        e,
                        "",
                        "scheduled",
                        ts,
                        ts,
                        0,
                        "server_error",
                        1,
                        0.0,
                        0,
                        0,
                        0,
                        None,
                        None,
                        None,
                        None,
                        None,
                        None,
                        50.0,
                    )
                )
                continue
            ttft = (
                180 + rng.expovariate(1 / 40) + (350 * math.sin(math.pi * (hour - 12) / 8) if 12 <= hour <= 20 else 0)
            )
            batch.append(
                (
                    e,
                    "",
                    "scheduled",
                    ts,
                    ts,
                    1,
                    None,
                    1,
                    0.0,
                    0,
                    0,
                    0,
                    2.0,
                    1.0,
                    ttft - 30,
                    ttft - 10,
                    ttft,
                    ttft + 2,
                    ttft + 300,
                )
            )
        con.executemany(sql, batch)
        con.commit()
    con.execute("ANALYZE")
    con.commit()
    con.close()


def timed(fn, repeat: int = 5) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), max(times)


def render_ms(data_dir: Path) -> tuple[float, float]:
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    os.environ["TTFT_PLANNER_DATA_DIR"] = str(data_dir)
    os.environ.pop("TTFT_PLANNER_DATABASE_URL", None)
    app = str(Path(__file__).resolve().parents[1] / "app" / "streamlit_app.py")
    times = []
    for _ in range(4):
        st.cache_data.clear()  # every run queries the database (no cached results)
        at = AppTest.from_file(app, default_timeout=60)
        at.switch_page("views/probes.py")
        t0 = time.perf_counter()
        at.run()
        times.append((time.perf_counter() - t0) * 1000)
        if at.exception:
            raise RuntimeError(at.exception)
    # the first run pays imports and opening the engine; the others are fresh sessions over an empty query cache
    return statistics.median(times[1:]), max(times[1:])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--keep", type=Path, default=None, help="data dir to reuse (built if missing)")
    args = ap.parse_args()
    data_dir = args.keep or Path(tempfile.mkdtemp(prefix="bench-probes-"))
    data_dir.mkdir(parents=True, exist_ok=True)
    db = data_dir / "planner.db"
    if not db.exists():
        t0 = time.perf_counter()
        build(db, args.rows)
        print(f"built {args.rows:,} samples in {time.perf_counter() - t0:.1f} s at {db}")
    engine = open_store(f"sqlite:///{db}")
    with engine.connect() as c:
        n = c.exec_driver_sql("SELECT COUNT(*) FROM probe_sample").scalar()
    key = pq.SeriesKey(1, "bench-1", "")
    lo, hi = pq.series_bounds(engine, key)
    hi += 1
    week = hi - 7 * 86_400_000
    queries = {
        "series_keys": lambda a, b: pq.series_keys(engine),
        "series_bounds": lambda a, b: pq.series_bounds(engine, key),
        "summary": lambda a, b: pq.summary(engine, key, a, b),
        "time_series": lambda a, b: pq.time_series(engine, key, a, b),
        "hour_of_day(Europe/Paris)": lambda a, b: pq.hour_of_day(engine, key, a, b, "Europe/Paris"),
        "day_hour_heatmap": lambda a, b: pq.day_hour_heatmap(engine, key, a, b, "Europe/Paris"),
        "ecdf_points": lambda a, b: pq.ecdf_points(engine, key, a, b),
        "phase_breakdown": lambda a, b: pq.phase_breakdown(engine, key, a, b),
        "cold_readings": lambda a, b: pq.cold_readings(engine, key.endpoint_id, key.vantage),
    }
    print(
        f"{n:,} samples in SQLite; one series = {n // ENDPOINTS:,} samples; load: {os.getloadavg()[0]:.1f} (1-min avg)"
    )
    print(f"{'query':<28}{'7 days med/max ms':>20}{'87 days med/max ms':>22}   target < {TARGET_QUERY_MS:.0f} ms")
    worst = 0.0
    for name, fn in queries.items():
        w_med, w_max = timed(lambda fn=fn: fn(week, hi))
        a_med, a_max = timed(lambda fn=fn: fn(lo, hi))
        worst = max(worst, w_med, a_med)
        print(f"{name:<28}{w_med:>10.1f} / {w_max:<8.1f}{a_med:>12.1f} / {a_max:<8.1f}")
    print(
        f"worst median query: {worst:.1f} ms ({'OK' if worst < TARGET_QUERY_MS else 'OVER'} "
        f"target {TARGET_QUERY_MS:.0f} ms)"
    )
    r_med, r_max = render_ms(data_dir)
    print(
        f"Probes page server-side render (AppTest, default 7-day range, cold cache): median {r_med:.0f} ms, "
        f"max {r_max:.0f} ms ({'OK' if r_med < TARGET_RENDER_MS else 'OVER'} target {TARGET_RENDER_MS:.0f} ms)"
    )


if __name__ == "__main__":
    main()
