"""Benchmark: `ttft-planner sources sync` of N LiteLLM spend-log rows, and what it costs the proxy's database.

A private PostgreSQL (tests/support/pg.py) gets LiteLLM's own schema (the litellm-proxy-extras migrations) and N
requests (generated in SQL: generate_series). Then, in a fresh process as a user runs it, `ttft-planner sources
sync` reads them into a SQLite store, page by page. Printed: wall time, requests per second and the sync's peak
RSS (os.wait4); on the source, the statements it ran, their total time, rows and blocks read and whether any page
scanned the table whole (pg_stat_user_tables seq_scan: 0 means every page was an index range on startTime,
request_id), and the plan of one page; then a second sync with nothing new (the cost of a sync on a quiet
proxy).

  python bench/bench_sources_litellm.py                   # 1,000,000 rows, pages of 5,000
  python bench/bench_sources_litellm.py --rows 100000 --page-rows 20000
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.pg import PostgresServer  # noqa: E402

_FILL = """
INSERT INTO "LiteLLM_SpendLogs" (request_id, call_type, "startTime", "endTime", "completionStartTime", model,
  api_base, prompt_tokens, completion_tokens, total_tokens, metadata)
SELECT 'chatcmpl-' || lpad(i::text, 9, '0'), 'acompletion',
  timestamp '2026-11-16 00:00' + i * interval '250 milliseconds',
  timestamp '2026-11-16 00:00' + i * interval '250 milliseconds' + (1500 + i %% 3000) * interval '1 millisecond',
  timestamp '2026-11-16 00:00' + i * interval '250 milliseconds' + (120 + i %% 400) * interval '1 millisecond',
  CASE WHEN i %% 3 = 0 THEN 'gpt-4.1-mini' ELSE 'claude-sonnet-4-5' END, 'https://api.openai.com/v1',
  1000 + i %% 9000, 10 + i %% 500, 1010 + i %% 9000 + i %% 500,
  jsonb_build_object('additional_usage_values',
    jsonb_build_object('prompt_tokens_details', jsonb_build_object('cached_tokens', i %% 1000)))
FROM generate_series(1, %(n)s) AS i
"""


def _stats(conn) -> dict:
    row = conn.execute(
        "SELECT seq_scan, coalesce(idx_scan, 0), n_live_tup FROM pg_stat_user_tables "
        "WHERE relname = 'LiteLLM_SpendLogs'"
    ).fetchone()
    io = conn.execute(
        "SELECT heap_blks_read + heap_blks_hit, coalesce(idx_blks_read, 0) + coalesce(idx_blks_hit, 0) "
        "FROM pg_statio_user_tables WHERE relname = 'LiteLLM_SpendLogs'"
    ).fetchone()
    return {"seq_scan": row[0], "idx_scan": row[1], "heap_blocks": io[0], "index_blocks": io[1]}


def _sync(store: str, dsn: str, page_rows: int) -> tuple[float, float, str]:
    env = {**os.environ, "LITELLM_BENCH_DSN": dsn}
    argv = [str(Path(sys.executable).with_name("ttft-planner")), "sources", "sync", "prod", "--page-rows"]
    argv += [str(page_rows), "--database-url", store]
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    out = proc.stdout.read() if proc.stdout else ""
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"sync failed: {out}")
    return wall, usage.ru_maxrss / 1024, out.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--page-rows", type=int, default=5_000)
    args = ap.parse_args()
    import litellm_proxy_extras
    import psycopg

    server = PostgresServer()
    server.start()
    try:
        url = server.fresh_database("litellm").replace("postgresql+psycopg://", "postgresql://")
        migrations = sorted((Path(litellm_proxy_extras.__file__).parent / "migrations").glob("*/migration.sql"))
        with psycopg.connect(url, autocommit=True) as conn:
            for sql in migrations:
                conn.execute(sql.read_text())
            t0 = time.perf_counter()
            conn.execute(_FILL, {"n": args.rows})
            conn.execute('VACUUM ANALYZE "LiteLLM_SpendLogs"')
            size = conn.execute("SELECT pg_size_pretty(pg_total_relation_size('\"LiteLLM_SpendLogs\"'))").fetchone()
            print(f"source: {args.rows:,} rows ({size[0]} with indexes) made in {time.perf_counter() - t0:.1f} s")
            plan = conn.execute(
                'EXPLAIN SELECT request_id FROM "LiteLLM_SpendLogs" WHERE ("startTime", request_id) > '
                "(timestamp '2026-11-16 01:00', '') ORDER BY \"startTime\", request_id LIMIT %(n)s",
                {"n": args.page_rows},
            ).fetchall()
            print("a page's plan: " + " / ".join(r[0].strip() for r in plan[:2]))
            before = _stats(conn)
        with tempfile.TemporaryDirectory() as tmp:
            store = f"sqlite:///{tmp}/planner.db"
            env = {**os.environ, "LITELLM_BENCH_DSN": url}
            cli = str(Path(sys.executable).with_name("ttft-planner"))
            subprocess.run(
                [cli, "sources", "add", "prod", "--litellm-dsn-env", "LITELLM_BENCH_DSN", "--database-url", store],
                env=env,
                check=True,
                capture_output=True,
            )
            print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
            wall, rss, out = _sync(store, url, args.page_rows)
            with psycopg.connect(url, autocommit=True) as conn:
                after = _stats(conn)
            print(f"sync: {wall:.1f} s, {args.rows / wall:,.0f} requests/s, peak RSS {rss:,.0f} MB")
            print("  " + out.replace("\n", "\n  "))
            print(
                f"on the source: {after['idx_scan'] - before['idx_scan']:,} index scans, "
                f"{after['seq_scan'] - before['seq_scan']} whole-table scans, "
                f"{after['heap_blocks'] - before['heap_blocks']:,} table and "
                f"{after['index_blocks'] - before['index_blocks']:,} index blocks touched"
            )
            wall2, rss2, out2 = _sync(store, url, args.page_rows)
            print(f"a second sync with nothing new: {wall2:.2f} s, peak RSS {rss2:,.0f} MB ({out2.splitlines()[0]})")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
