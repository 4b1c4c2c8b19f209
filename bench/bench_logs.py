"""Benchmark: summarise a 1,000,000-request OpenAI-style JSON Lines log, side by side with DuckDB.

Each contender runs in a fresh child process so its peak memory (max RSS) is its own:

  ours    planner.logs.read_logs + summarize_logs (percentiles whole / working day / per model /
          per hour, cached share, hourly and weekday traffic, peak rate, cold-exposure curve)
  duckdb  read_json over the same file, computing the same nearest-rank prompt-token percentiles
          (quantile_disc), whole and working day, and the cached share

  python bench/bench_logs.py                       # generates bench/out/requests-1000k.jsonl once
  python bench/bench_logs.py --requests 200000     # smaller file
Targets (issue 5): ours ≤ 10 s and ≤ 1.5 GB peak on the 2-core machine; within 2× of DuckDB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PS = (0.5, 0.9, 0.95, 0.99)


def run_ours(path: Path) -> dict:
    from planner.logs import read_logs
    from planner.logs.summary import summarize_logs

    t0 = time.perf_counter()
    res = read_logs([path])
    t1 = time.perf_counter()
    s = summarize_logs(res.frame, tz="Europe/Berlin")
    t2 = time.perf_counter()
    return {"n": s.n, "parse_s": t1 - t0, "summary_s": t2 - t1, "total_s": t2 - t0,
            "p": {k: s.prompt[k].value for k in ("p50", "p90", "p95", "p99")},
            "p_workday": {k: s.prompt_workday[k].value for k in ("p50", "p90", "p95", "p99")},
            "cached_token_fraction": s.cached["token_fraction"]}


def run_duckdb(path: Path) -> dict:
    import duckdb

    t0 = time.perf_counter()
    con = duckdb.connect()
    con.execute("SET TimeZone = 'Europe/Berlin'")
    qs = ", ".join(f"quantile_disc(prompt, {p})" for p in PS)
    sql = f"""
        WITH r AS (
          SELECT usage.prompt_tokens AS prompt, coalesce(usage.prompt_tokens_details.cached_tokens, 0) AS cached,
                 to_timestamp(created) AS t
          FROM read_json('{path}', format = 'newline_delimited',
                         columns = {{created: 'BIGINT', model: 'VARCHAR',
                                     usage: 'STRUCT(prompt_tokens BIGINT, completion_tokens BIGINT,
                                                    prompt_tokens_details STRUCT(cached_tokens BIGINT))'}})
        )
        SELECT count(*), {qs},
               (SELECT [{qs}] FROM r WHERE isodow(t) <= 5 AND hour(t) >= 9 AND hour(t) < 18),
               sum(cached) / sum(prompt)
        FROM r"""
    row = con.execute(sql).fetchone()
    t1 = time.perf_counter()
    keys = ("p50", "p90", "p95", "p99")
    return {"n": row[0], "total_s": t1 - t0, "p": dict(zip(keys, row[1:5])), "p_workday": dict(zip(keys, row[5])),
            "cached_token_fraction": float(row[6])}


def child(which: str, path: Path) -> None:
    out = run_ours(path) if which == "ours" else run_duckdb(path)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out["peak_rss_mb"] = usage.ru_maxrss / 1024
    out["cpu_s"] = usage.ru_utime + usage.ru_stime  # the whole child, start-up included; steadier than wall time on a busy machine
    print(json.dumps(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--file", type=Path, default=None)
    ap.add_argument("--child", choices=["ours", "duckdb"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    path = args.file or ROOT / "bench" / "out" / f"requests-{args.requests // 1000}k.jsonl"
    if args.child:
        child(args.child, path)
        return
    if not path.exists():
        sys.path.insert(0, str(ROOT / "bench"))
        from gen_logs import write_jsonl

        path.parent.mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        size = write_jsonl(path, args.requests)
        print(f"generated {path} ({size / 1e6:.0f} MB, {args.requests:,} requests) in {time.perf_counter() - t:.0f} s")
    size_mb = path.stat().st_size / 1e6
    print(f"file: {path.name}, {size_mb:.0f} MB, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    results = {}
    for which in ("duckdb", "ours"):
        proc = subprocess.run([sys.executable, __file__, "--child", which, "--file", str(path)],
                              capture_output=True, text=True, check=True)
        results[which] = json.loads(proc.stdout.strip().splitlines()[-1])
    ours, duck = results["ours"], results["duckdb"]
    print(f"{'':8} {'seconds':>8} {'peak MB':>8} {'CPU s':>6}  p50 / p95 prompt tokens (all; working day)")
    for name, r in (("duckdb", duck), ("ours", ours)):
        print(f"{name:8} {r['total_s']:8.2f} {r['peak_rss_mb']:8.0f} {r['cpu_s']:6.2f}  {r['p']['p50']:.0f} / {r['p']['p95']:.0f}; "
              f"{r['p_workday']['p50']:.0f} / {r['p_workday']['p95']:.0f}")
    print(f"ours: parse {ours['parse_s']:.2f} s + summary {ours['summary_s']:.2f} s; "
          f"ratio to DuckDB {ours['total_s'] / duck['total_s']:.2f}×")
    same = ours["p"] == {k: float(v) for k, v in duck["p"].items()} and ours["n"] == duck["n"]
    print(f"same n and whole-log percentiles as DuckDB: {same}")
    ok = ours["total_s"] <= 10 and ours["peak_rss_mb"] <= 1536
    print(f"targets (≤ 10 s, ≤ 1.5 GB): {'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    main()
