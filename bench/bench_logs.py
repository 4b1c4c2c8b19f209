"""Benchmark: summarise a 1,000,000-request OpenAI-style JSON Lines log, side by side with DuckDB, plain and gzipped.

Each contender runs in a fresh child process so its peak memory (max RSS) is its own:

  ours       planner.logs.read_logs + summarize (percentiles whole / working day / per model /
             per hour, cached share, hourly and weekday traffic, peak rate, cold-exposure curve)
  duckdb     read_json over the same file, computing the same nearest-rank prompt-token percentiles
             (quantile_disc), whole and working day, and the cached share
  ours .gz   ours on the gzipped file (made once with gzip -1 beside the plain one)

  python bench/bench_logs.py                       # generates bench/out/requests-1000k.jsonl once
  python bench/bench_logs.py --requests 200000     # smaller file
  python bench/bench_logs.py --repeat 10           # the 10 M run: the 1 M file 10× over (≈ 5.9 GB), no gzip;
                                                   # by hand, takes a while: nice it on a shared machine
  python bench/bench_logs.py --cli --repeat 10     # the commands as users run them, each a fresh `ttft-planner`
                                                   # process: logs summarize --json, logs import (a temp SQLite),
                                                   # whatif --json; peak RSS of that process (os.wait4) and wall
                                                   # time beside DuckDB's in the same run
  python bench/bench_logs.py --cli --only import   # logs import of the same requests as JSONL, CSV and Parquet
                                                   # (made once beside the JSONL file), peak memory side by side
Targets (issue 13): ≤ 1.3× DuckDB on 1 M requests, gzip ≤ 1.5× plain; 10 M: peak ≤ 2 GB and ≤ 1.5× DuckDB;
--cli: every command's peak ≤ 2 GB, with the same n (and summarize the same percentiles) as DuckDB.
Ratios are printed for wall time and CPU time (CPU is steadier on a busy machine).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PS = (0.5, 0.9, 0.95, 0.99)


def run_ours(path: Path) -> dict:
    from planner.logs import read_logs, summarize

    t0 = time.perf_counter()
    res = read_logs([path])
    t1 = time.perf_counter()
    s = summarize(res.frame, tz="Europe/Berlin")
    t2 = time.perf_counter()
    return {
        "n": s.n,
        "parse_s": t1 - t0,
        "summary_s": t2 - t1,
        "total_s": t2 - t0,
        "p": {k: s.prompt[k].value for k in ("p50", "p90", "p95", "p99")},
        "p_workday": {k: s.prompt_workday[k].value for k in ("p50", "p90", "p95", "p99")},
        "cached_token_fraction": s.cached["token_fraction"],
    }


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
    return {
        "n": row[0],
        "total_s": t1 - t0,
        "p": dict(zip(keys, row[1:5], strict=True)),
        "p_workday": dict(zip(keys, row[5], strict=False)),
        "cached_token_fraction": float(row[6]),
    }


def child(which: str, path: Path) -> None:
    if which == "tables":
        _tables(path)
        return
    out = run_ours(path) if which == "ours" else run_duckdb(path)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out["peak_rss_mb"] = usage.ru_maxrss / 1024
    out["cpu_s"] = (
        usage.ru_utime + usage.ru_stime
    )  # the whole child, start-up included; steadier than wall time on a busy machine
    print(json.dumps(out))


def _child(which: str, path: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", which, "--file", str(path)], capture_output=True, text=True, check=True
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _measured(argv: list[str]) -> dict:
    """Run argv as a fresh process; its wall time, peak RSS (MB, of that process alone: os.wait4) and stdout."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # the worktree's planner, not an installed copy
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall_s = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if proc.returncode:
        raise SystemExit(f"{' '.join(argv[:3])} … exited {proc.returncode}: {stderr.strip()[-500:]}")
    return {
        "total_s": wall_s,
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "stdout": stdout,
    }


def run_cli(path: Path, whatif_spec: str, only: set[str]) -> None:
    """The three commands a user runs on the file, each a fresh `ttft-planner` process, beside DuckDB's read."""
    cli = str(Path(sys.executable).with_name("ttft-planner"))
    print(f"{'':30} {'seconds':>8} {'× DuckDB':>8} {'peak MB':>8} {'CPU s':>7}", flush=True)
    rows = []

    def show(name: str, r: dict) -> None:  # each as it is measured: a long run is not lost to a later failure
        rows.append((name, r))
        print(
            f"{name:30} {r['total_s']:8.1f} {r['total_s'] / duck['total_s']:8.2f} {r['peak_rss_mb']:8.0f} "
            f"{r['cpu_s']:7.1f}",
            flush=True,
        )

    duck = _child("duckdb", path)
    show("duckdb read_json + quantiles", duck)
    exact = True
    if "summarize" in only:
        summ = _measured([cli, "logs", "summarize", str(path), "--tz", "Europe/Berlin", "--json"])
        got = json.loads(summ["stdout"])
        show("logs summarize --json", summ)
        same_p = all(got["prompt_tokens"][k]["value"] == float(v) for k, v in duck["p"].items())
        print(f"summarize: n {got['n']:,} (DuckDB {duck['n']:,}), same prompt-token percentiles as DuckDB: {same_p}")
        exact &= same_p and got["n"] == duck["n"]
    if "import" in only:
        # The same requests as JSON Lines, CSV and Parquet, each imported by a fresh process: peak memory side by side.
        # Made in a child: a child's peak RSS starts from its parent's at fork, so the parent must stay small.
        subprocess.run([sys.executable, __file__, "--child", "tables", "--file", str(path)], check=True)
        csv_path, parquet_path = path.with_suffix(".csv"), path.with_suffix(".parquet")
        for label, src, extra in (
            ("logs import JSONL (SQLite)", path, []),
            ("logs import CSV (SQLite)", csv_path, TABLE_MAP),
            ("logs import Parquet (SQLite)", parquet_path, TABLE_MAP),
        ):
            with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
                db = Path(tmp) / "bench.db"
                imp = _measured([cli, "logs", "import", str(src), *extra, "--database-url", f"sqlite:///{db}"])
                with sqlite3.connect(db) as con:
                    stored = con.execute("SELECT count(*) FROM log_request").fetchone()[0]
                imp["db_mb"] = db.stat().st_size / 1e6
            show(label, imp)
            print(f"  {stored:,} rows stored (DuckDB counts {duck['n']:,}), database {imp['db_mb']:,.0f} MB")
            exact &= stored == duck["n"]
    if "whatif" in only:
        wi = _measured([cli, "whatif", "--log", str(path), "--deployment", whatif_spec, "--json"])
        replayed = json.loads(wi["stdout"])
        show("whatif --json (1 candidate)", wi)
        cand = replayed["candidates"][0]
        p95 = f"{cand['p95_ms']:,.0f} ms" if cand["ok"] else cand["message"]
        print(
            f"whatif: {replayed['n_requests']:,} requests replayed (DuckDB counts {duck['n']:,}); predicted p95 {p95}"
        )
        exact &= replayed["n_requests"] == duck["n"]
    bounded = all(r["peak_rss_mb"] <= 2048 for _, r in rows[1:])
    verdict = "met" if exact and bounded else "NOT met"
    print(f"targets (every command's peak ≤ 2 GB, exact n and percentiles): {verdict}")


TABLE_MAP = ["--map=ts=created"] + [
    f"--map={c}={c}" for c in ("model", "prompt_tokens", "cached_tokens", "output_tokens")
]


def _tables(path: Path) -> tuple[Path, Path]:
    """The JSON Lines file's requests as a CSV and a Parquet file beside it (made once, by DuckDB, out of core)."""
    import duckdb

    made = []
    for ext, options in (("csv", "FORMAT csv, HEADER true"), ("parquet", "FORMAT parquet")):
        out = path.with_suffix(f".{ext}")
        if not out.exists():
            t = time.perf_counter()
            part = out.with_name(out.name + ".part")
            duckdb.sql(
                f"""COPY (SELECT created, model, usage.prompt_tokens AS prompt_tokens,
                                 coalesce(usage.prompt_tokens_details.cached_tokens, 0) AS cached_tokens,
                                 usage.completion_tokens AS output_tokens
                          FROM read_json('{path}', format = 'newline_delimited',
                                         columns = {{created: 'BIGINT', model: 'VARCHAR',
                                                     usage: 'STRUCT(prompt_tokens BIGINT, completion_tokens BIGINT,
                                                     prompt_tokens_details STRUCT(cached_tokens BIGINT))'}}))
                    TO '{part}' ({options})"""
            )
            part.rename(out)
            print(f"made {out.name} ({out.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t:.0f} s")
        made.append(out)
    return made[0], made[1]


def _repeated(base: Path, times: int) -> Path:
    path = base.with_name(f"{base.stem}-x{times}.jsonl")
    if not path.exists():
        t = time.perf_counter()
        part = path.with_name(path.name + ".part")
        with open(part, "wb") as out:
            for _ in range(times):
                with open(base, "rb") as fh:
                    shutil.copyfileobj(fh, out, 16 << 20)
        part.rename(path)  # only a whole file is ever reused
        print(f"made {path.name} ({path.stat().st_size / 1e9:.1f} GB) in {time.perf_counter() - t:.0f} s")
    return path


def _gzipped(path: Path) -> Path:
    gz = path.with_name(path.name + ".gz")
    if not gz.exists():
        t = time.perf_counter()
        part = gz.with_name(gz.name + ".part")
        with open(path, "rb") as fh, gzip.open(part, "wb", compresslevel=1) as out:
            shutil.copyfileobj(fh, out, 16 << 20)
        part.rename(gz)
        print(f"made {gz.name} ({gz.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t:.0f} s")
    return gz


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=1, help="concatenate the file this many times (the 10 M run)")
    ap.add_argument("--file", type=Path, default=None)
    ap.add_argument("--child", choices=["ours", "duckdb", "tables"], help=argparse.SUPPRESS)
    ap.add_argument("--cli", action="store_true", help="measure logs summarize / logs import / whatif as run by users")
    ap.add_argument(
        "--only",
        default="summarize,import,whatif",
        help="with --cli: which commands to measure (comma-separated), e.g. whatif",
    )
    ap.add_argument(
        "--whatif-spec",
        default="dedicated:name=bench,replicas=40,slots=8,prefill=12000,decode=60,usd_per_gpu_h=3.2,gpus=1,rtt=40",
        help="the candidate --cli replays the file against",
    )
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
    big = args.repeat > 1
    if big:
        path = _repeated(path, args.repeat)
    size_mb = path.stat().st_size / 1e6
    print(f"file: {path.name}, {size_mb:,.0f} MB, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    if args.cli:
        run_cli(path, args.whatif_spec, set(args.only.split(",")))
        return
    runs = [("duckdb", "duckdb", path), ("ours", "ours", path)]
    if not big:
        runs.append(("ours .gz", "ours", _gzipped(path)))
    results = {label: _child(which, p) for label, which, p in runs}
    ours, duck = results["ours"], results["duckdb"]
    print(f"{'':9} {'seconds':>8} {'peak MB':>8} {'CPU s':>7}  p50 / p95 prompt tokens (all; working day)")
    for name, r in results.items():
        print(
            f"{name:9} {r['total_s']:8.2f} {r['peak_rss_mb']:8.0f} {r['cpu_s']:7.2f}  "
            f"{r['p']['p50']:.0f} / {r['p']['p95']:.0f}; "
            f"{r['p_workday']['p50']:.0f} / {r['p_workday']['p95']:.0f}"
        )
    wall, cpu = ours["total_s"] / duck["total_s"], ours["cpu_s"] / duck["cpu_s"]
    print(
        f"ours: parse {ours['parse_s']:.2f} s + summary {ours['summary_s']:.2f} s; "
        f"ratio to DuckDB {wall:.2f}× wall, {cpu:.2f}× CPU"
    )
    same = all(
        r["p"] == {k: float(v) for k, v in duck["p"].items()} and r["n"] == duck["n"]
        for k, r in results.items()
        if k != "duckdb"
    )
    print(f"same n and whole-log percentiles as DuckDB: {same}")
    if big:
        ok = min(wall, cpu) <= 1.5 and ours["peak_rss_mb"] <= 2048
        print(f"targets (≤ 1.5× DuckDB, peak ≤ 2 GB): {'met' if ok else 'NOT met'}")
    else:
        gz = results["ours .gz"]
        gz_wall, gz_cpu = gz["total_s"] / ours["total_s"], gz["cpu_s"] / ours["cpu_s"]
        print(f"gzip / plain: {gz_wall:.2f}× wall, {gz_cpu:.2f}× CPU")
        ok = min(wall, cpu) <= 1.3 and min(gz_wall, gz_cpu) <= 1.5
        print(f"targets (≤ 1.3× DuckDB, gzip ≤ 1.5× plain): {'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    main()
