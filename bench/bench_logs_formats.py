"""Benchmark: `ttft-planner logs summarize` against DuckDB's plain percentile query, per log format, as users run it.

For each format the same requests are written once (from the benchmark's OpenAI JSON Lines file, by DuckDB):
JSONL, CSV, CSV.gz, Parquet, BurstGPT, Azure (code trace) and LiteLLM CSV, and with --bad a twin of each text
format with a UTF-8 BOM, one malformed line in the middle and a truncated last line. Then, alternating in one
run, each contender runs as a fresh process, `--reps` times:

  ours     ttft-planner logs summarize --json FILE (every summary, the rejected lines named)
  duckdb   python -c: count(*) and quantile_disc of the prompt-token column over read_json / read_csv /
           read_parquet (ignore_errors for the bad twins), nothing else
  same     DuckDB alone computing the figures the summary shows (whole-log, working-day and output percentiles,
           per model, per hour of day, per clock hour, the cold-start gaps; TTFT where the format has it) over the
           same reader: the floor for this work, without our checks, line naming or Python (a text file read
           once into a table, a Parquet file scanned by each query: the faster way for each)

and the table shows the median and the fastest wall time of each, the median and minimum ratio ours / DuckDB,
ours / same, and the peak RSS (os.wait4, the process alone). n and p50/p90/p95/p99 are checked equal on every run.

  python bench/bench_logs_formats.py                          # 1 M requests, every format, 5 reps each
  python bench/bench_logs_formats.py --requests 10000000 --reps 5 --only jsonl,csv,parquet
  python bench/bench_logs_formats.py --bad                    # the BOM / malformed / truncated twins as well
  git worktree add /tmp/before HEAD~1 && python bench/bench_logs_formats.py --before /tmp/before
                                                              # the previous code as a third contender
  python bench/bench_logs_formats.py --matrix                 # the defect matrix's worst cells, 1 M requests
  python bench/bench_logs_formats.py --matrix --requests 10000000 --reps 3 --cells rfc-clean-lf-plain-early,...
  python bench/bench_logs_formats.py --matrix --requests 10000000 --reps 2 --before /tmp/before
                                                              # ... with the previous code as a third contender

--matrix runs cells of the defect matrix (tests/support/log_matrix.py: the same requests as JSON Lines, a gateway CSV,
an RFC-4180 CSV and Parquet, with its defects) instead: by default each format's clean file and its worst cell (all
its defects together, far, CRLF + BOM + .gz; for Parquet zstd with its count column stored as text) and the RFC CSV
the issue names (BOM, CRLF, a quoted line break, a malformed line). Alternated, `--reps` times each, in fresh
processes: `logs summarize --json` (its figures and named lines checked against the cell's truth: "exact", or how many
figures differ) and DuckDB alone computing the same figures over the same file (ignore_errors, every needed column
cast in SQL). Printed per cell: median and fastest wall time, median and minimum ratio ours / DuckDB, peak RSS of
each, beside the issue's targets (≤ 1.3× on clean files, ≤ 1.5× on the worst cell, ≤ 1 GB peak everywhere).
Files live in bench/out/ (made once; several GB at 10 M).
"""

from __future__ import annotations

import argparse
import compileall
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
PS = (0.5, 0.9, 0.95, 0.99)

_USAGE = (
    "{created: 'BIGINT', model: 'VARCHAR', usage: 'STRUCT(prompt_tokens BIGINT, completion_tokens BIGINT, "
    "prompt_tokens_details STRUCT(cached_tokens BIGINT))'}"
)
_REQ = f"""SELECT created, model, usage.prompt_tokens AS prompt, usage.completion_tokens AS output,
  coalesce(usage.prompt_tokens_details.cached_tokens, 0) AS cached
  FROM read_json('{{src}}', format = 'newline_delimited', columns = {_USAGE})"""
# format → (file name suffix, COPY select over the requests r, COPY options, prompt column, DuckDB reader)
FORMATS = {
    "jsonl": (".jsonl", None, None, "usage.prompt_tokens", "json"),
    "csv": (
        ".csv",
        "SELECT strftime(to_timestamp(created), '%Y-%m-%dT%H:%M:%SZ') AS timestamp, model, prompt AS prompt_tokens, "
        "cached AS cached_tokens, output AS output_tokens FROM r",
        "FORMAT csv, HEADER true",
        "prompt_tokens",
        "csv",
    ),
    "csv.gz": (".csv.gz", "csv", "FORMAT csv, HEADER true, COMPRESSION gzip", "prompt_tokens", "csv"),
    "parquet": (
        ".parquet",
        "SELECT to_timestamp(created) AS timestamp, model, prompt AS prompt_tokens, cached AS cached_tokens, "
        "output AS output_tokens FROM r",
        "FORMAT parquet",
        "prompt_tokens",
        "parquet",
    ),
    "burstgpt": (
        "-burstgpt.csv",
        'SELECT created - min(created) OVER () AS "Timestamp", \'ChatGPT\' AS "Model", prompt AS "Request tokens", '
        'output AS "Response tokens", prompt + output AS "Total tokens", \'API log\' AS "Log Type" FROM r',
        "FORMAT csv, HEADER true",
        '"Request tokens"',
        "csv",
    ),
    "azure": (
        "-azure.csv",
        "SELECT strftime(to_timestamp(created)::TIMESTAMP, '%Y-%m-%d %H:%M:%S.%f') AS \"TIMESTAMP\", "
        'prompt AS "ContextTokens", output AS "GeneratedTokens" FROM r',
        "FORMAT csv, HEADER true",
        '"ContextTokens"',
        "csv",
    ),
    "litellm": (
        "-litellm.csv",
        "SELECT 'chatcmpl-' || row_number() OVER () AS request_id, 'acompletion' AS call_type, 0.001 AS spend, "
        "prompt + output AS total_tokens, prompt AS prompt_tokens, output AS completion_tokens, "
        "strftime(to_timestamp(created), '%Y-%m-%dT%H:%M:%S.000Z') AS \"startTime\", "
        "strftime(to_timestamp(created + 2), '%Y-%m-%dT%H:%M:%S.000Z') AS \"endTime\", "
        "strftime(to_timestamp(created), '%Y-%m-%dT%H:%M:%S.300Z') AS \"completionStartTime\", model, "
        "'dev-team' AS user, 'success' AS status, "
        '\'{"user_api_key_alias": "agent, team A", "additional_usage_values": '
        '{"prompt_tokens_details": {"cached_tokens": \' || cached || \'}}}\' AS metadata, '
        "'False' AS cache_hit, 'Fix the failing test, then run \"make check\"' AS messages FROM r",
        "FORMAT csv, HEADER true",
        "prompt_tokens",
        "csv",
    ),
}


def _made(path: Path, make) -> Path:
    """path, made once by make(part) into a .part file renamed at the end (a half-made file is never reused)."""
    if not path.exists():
        t = time.perf_counter()
        part = path.with_name(path.name + ".part")
        make(part)
        part.rename(path)
        print(f"made {path.name} ({path.stat().st_size / 1e6:,.0f} MB) in {time.perf_counter() - t:.0f} s", flush=True)
    return path


def base_jsonl(requests: int) -> Path:
    def make(part: Path) -> None:
        subprocess.run(
            [sys.executable, str(ROOT / "bench" / "gen_logs.py"), str(part), "--requests", str(requests)], check=True
        )

    return _made(OUT / f"requests-{requests // 1000}k.jsonl", make)


def format_file(fmt: str, src: Path) -> Path:
    suffix, select, _, _, _ = FORMATS[fmt]
    if select is None:
        return src
    path = src.with_name(src.name.removesuffix(".jsonl") + suffix)

    def make(part: Path) -> None:
        # in a child process: a parent that had grown would pass its peak RSS on to every contender it starts
        # (Linux keeps the larger maxrss across fork and exec)
        subprocess.run([sys.executable, __file__, "--make", fmt, "--file", str(src), "--to", str(part)], check=True)

    return _made(path, make)


def make_child(fmt: str, src: str, part: str) -> None:
    """Write the requests of the JSON Lines file `src` as format `fmt` to `part` (DuckDB's COPY)."""
    import duckdb

    _, select, options, _, _ = FORMATS[fmt]
    if select == "csv":
        select = FORMATS["csv"][1]
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    requests = _REQ.replace("{src}", src)
    con.execute(f"COPY (WITH r AS ({requests}) {select}) TO '{part}' ({options})")


def bad_twin(path: Path) -> Path:
    """The file with a UTF-8 BOM, one malformed line in its middle and its last line cut in half (same packing)."""
    twin = path.with_name("bad-" + path.name)
    if path.name.endswith(".gz"):
        plain = bad_twin(path.with_name(path.name.removesuffix(".gz")))

        def pack(part: Path) -> None:
            with open(plain, "rb") as src, gzip.open(part, "wb", compresslevel=1) as out:
                shutil.copyfileobj(src, out, 16 << 20)

        return _made(twin, pack)

    def make(part: Path) -> None:
        size = path.stat().st_size
        with open(path, "rb") as src, open(part, "wb") as out:
            src.seek(max(0, size - (1 << 20)))
            tail = src.read()
            last = size - len(tail) + tail.rfind(b"\n", 0, len(tail) - 1) + 1  # where the last line starts
            src.seek(size // 2)
            middle = size // 2 + len(src.readline())  # the end of the line holding the middle byte
            src.seek(0)
            out.write(b"\xef\xbb\xbf")
            _copy(src, out, middle)
            out.write(b'{"this line": "is not a request\n')
            _copy(src, out, last + (size - last) // 2 - middle)

    return _made(twin, make)


def _copy(src, out, n: int) -> None:
    while n > 0:
        chunk = src.read(min(n, 16 << 20))
        if not chunk:
            return
        out.write(chunk)
        n -= len(chunk)


# format → the summary's columns over its reader: arrival (ms), model, prompt, output and cached tokens, TTFT (ms)
_CSV_COLUMNS = "epoch_ms(timestamp::TIMESTAMPTZ), model, prompt_tokens, output_tokens, cached_tokens, NULL::DOUBLE"
SAME_COLUMNS = {
    "jsonl": "created * 1000, model, usage.prompt_tokens, usage.completion_tokens, "
    "coalesce(usage.prompt_tokens_details.cached_tokens, 0), NULL::DOUBLE",
    "csv": _CSV_COLUMNS,
    "csv.gz": _CSV_COLUMNS,
    "parquet": _CSV_COLUMNS,
    "burstgpt": '"Timestamp" * 1000, "Model", "Request tokens", "Response tokens", 0, NULL::DOUBLE',
    "azure": 'epoch_ms("TIMESTAMP"::TIMESTAMP), NULL::VARCHAR, "ContextTokens", "GeneratedTokens", 0, NULL::DOUBLE',
    "litellm": 'epoch_ms("startTime"::TIMESTAMPTZ), model, prompt_tokens, completion_tokens, '
    "json_extract(metadata, '$.additional_usage_values.prompt_tokens_details.cached_tokens')::BIGINT, "
    'epoch_ms("completionStartTime"::TIMESTAMPTZ) - epoch_ms("startTime"::TIMESTAMPTZ)',
}
_LEVELS = "[0.5, 0.9, 0.95, 0.99]"
_WORKDAY = "(ts // 86400000 + 3) % 7 < 5 AND ts % 86400000 >= 9 * 3600000 AND ts % 86400000 < 18 * 3600000"
# planner.logs.exposure.DEFAULT_WINDOWS_S in ms (not imported: this contender is DuckDB alone)
_WINDOWS_MS = tuple(1000 * w for w in (10, 20, 30, 60, 120, 180, 300, 600, 900, 1200, 1800, 2700, 3600))


def _scan(fmt: str, path: str, bad: bool) -> str:
    reader = FORMATS[fmt][4]
    errors = ", ignore_errors = true" if bad else ""
    if reader == "json":
        return f"read_json('{path}', format = 'newline_delimited', columns = {_USAGE}{errors})"
    if reader == "csv":
        return f"read_csv('{path}'{errors})"
    return f"read_parquet('{path}')"


def duckdb_child(fmt: str, path: str, bad: bool) -> None:
    import duckdb

    column = FORMATS[fmt][3]
    qs = ", ".join(f"quantile_disc({column}, {p})" for p in PS)
    row = duckdb.sql(f"SELECT count({column}), {qs} FROM {_scan(fmt, path, bad)}").fetchall()[0]
    print(json.dumps({"n": row[0], "p": list(row[1:])}))


def same_child(fmt: str, path: str, bad: bool) -> None:
    """DuckDB alone computing the figures `logs summarize` shows, in as few queries as it takes."""
    same_figures(f"SELECT {SAME_COLUMNS[fmt]} FROM {_scan(fmt, path, bad)}", FORMATS[fmt][4] == "parquet")


def same_figures(rows: str, columnar: bool) -> None:
    """The figures `logs summarize` shows over `rows` (SQL: arrival ms, model, prompt, output and cached tokens,
    TTFT ms), by DuckDB alone; prints {n, p: the prompt-token percentiles}."""
    import duckdb

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    cols = "ts, model, p, o, c, ttft"
    if columnar:  # columnar: each query reads only its columns
        con.execute(f"CREATE VIEW r({cols}) AS {rows}")
    else:  # text: parsed once
        con.execute(f"CREATE TEMP TABLE r({cols}) AS {rows}")
    n, *whole = con.execute(
        f"""SELECT count(p), min(ts), max(ts), sum(p), sum(c), count(*) FILTER (WHERE c > 0),
            quantile_disc(p, {_LEVELS}), quantile_disc(p, {_LEVELS}) FILTER (WHERE {_WORKDAY}),
            quantile_disc(o, {_LEVELS}), quantile_disc(ttft, {_LEVELS}) FROM r"""
    ).fetchall()[0]
    con.execute(
        "SELECT model, count(*), quantile_disc(p, [0.5, 0.95]), sum(c), sum(p), avg(o) FROM r GROUP BY model"
    ).fetchall()
    con.execute(
        "SELECT ts // 3600000 % 24 AS hour, count(*), sum(p), sum(c), sum(o), quantile_disc(p, [0.5, 0.95]), "
        "quantile_disc(ttft, [0.5, 0.95]) FROM r GROUP BY hour"
    ).fetchall()
    con.execute("SELECT ts // 3600000 AS h, count(*), sum(p), sum(o) FROM r GROUP BY h").fetchall()
    counts = ", ".join(f"count(*) FILTER (WHERE gap > {w})" for w in _WINDOWS_MS)
    con.execute(
        f"SELECT {counts} FROM (SELECT ts - lag(ts) OVER (ORDER BY ts) AS gap FROM (SELECT DISTINCT ts FROM r))"
    ).fetchall()
    print(json.dumps({"n": n, "p": whole[5]}))


def _measured(argv: list[str], tree: Path = ROOT) -> dict:
    """argv as a fresh process (the project's code from `tree`): wall time, peak RSS (MB, that process alone:
    os.wait4), stdout."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall_s = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{' '.join(argv[:4])} … failed: {stderr.strip()[-800:]}")
    return {"wall_s": wall_s, "rss_mb": usage.ru_maxrss / 1024, "stdout": stdout}


def _ours(path: Path, tree: Path = ROOT) -> dict:
    argv = [str(Path(sys.executable).with_name("ttft-planner")), "logs", "summarize", "--json", str(path)]
    got = _measured(argv, tree)
    d = json.loads(got["stdout"])
    got["n"] = d["n"]
    got["p"] = [d["prompt_tokens"][k]["value"] for k in ("p50", "p90", "p95", "p99")]
    got["rejected"] = d.get("n_rejected", 0)
    return got


def _duck(fmt: str, path: Path, bad: bool, same: bool = False) -> dict:
    argv = [sys.executable, __file__, "--child", fmt, "--file", str(path)] + (["--bad"] if bad else [])
    argv += ["--same"] if same else []
    got = _measured(argv)
    got.update(json.loads(got["stdout"].strip().splitlines()[-1]))
    return got


def compare(fmt: str, path: Path, reps: int, bad: bool, before: Path | None = None) -> dict:
    ours, duck, figures, old = [], [], [], []
    for _ in range(reps):  # alternate, so a busy moment of the machine lands on all
        ours.append(_ours(path))
        duck.append(_duck(fmt, path, bad))
        figures.append(_duck(fmt, path, bad, same=True))
        if before is not None:
            old.append(_ours(path, before))
    for o, d in zip(ours + ours, duck + figures, strict=True):
        if (o["n"], [float(x) for x in o["p"]]) != (d["n"], [float(x) for x in d["p"]]):
            print(f"  {fmt}: ours n={o['n']} p={o['p']} vs DuckDB n={d['n']} p={d['p']}")
    ratios = [o["wall_s"] / d["wall_s"] for o, d in zip(ours, duck, strict=True)]
    same_ratios = [o["wall_s"] / d["wall_s"] for o, d in zip(ours, figures, strict=True)]
    return {
        "format": ("bad " if bad else "") + fmt,
        "n": ours[0]["n"],
        "same": all(o["n"] == d["n"] and o["p"] == d["p"] for o, d in zip(ours + ours, duck + figures, strict=True)),
        "ours_s": statistics.median(o["wall_s"] for o in ours),
        "ours_min_s": min(o["wall_s"] for o in ours),
        "duck_s": statistics.median(d["wall_s"] for d in duck),
        "duck_min_s": min(d["wall_s"] for d in duck),
        "ratio_median": statistics.median(ratios),
        "ratio_min": min(ratios),
        "same_s": statistics.median(d["wall_s"] for d in figures),
        "same_ratio_median": statistics.median(same_ratios),
        "same_ratio_min": min(same_ratios),
        "same_rss_mb": max(d["rss_mb"] for d in figures),
        "ours_rss_mb": max(o["rss_mb"] for o in ours),
        "duck_rss_mb": max(d["rss_mb"] for d in duck),
        "before_s": statistics.median(o["wall_s"] for o in old) if old else None,
        "before_rss_mb": max(o["rss_mb"] for o in old) if old else None,
    }


_ALL_CAST = "read_csv('{path}', ignore_errors = true, all_varchar = true)"
# matrix format → DuckDB's rows of a cell's file for same_figures: arrival ms, model, prompt, output, cached, TTFT ms
MATRIX_SAME = {
    "jsonl": "SELECT try_cast(created AS BIGINT) * 1000, model, try_cast(usage.prompt_tokens AS BIGINT), "
    "try_cast(usage.completion_tokens AS BIGINT), coalesce(try_cast(usage.prompt_tokens_details.cached_tokens AS "
    "BIGINT), 0), NULL::DOUBLE FROM read_json('{path}', format = 'newline_delimited', ignore_errors = true, "
    "columns = {{created: 'VARCHAR', model: 'VARCHAR', usage: 'STRUCT(prompt_tokens VARCHAR, completion_tokens "
    "VARCHAR, prompt_tokens_details STRUCT(cached_tokens VARCHAR))'}})",
    "csv": "SELECT epoch_ms(try_cast(started AS TIMESTAMP)), llm, try_cast(tok_in_total AS BIGINT), "
    "try_cast(tok_out AS BIGINT), try_cast(tok_in_hit AS BIGINT), try_cast(first_byte_ms AS DOUBLE) FROM " + _ALL_CAST,
    "rfc": "SELECT epoch_ms(try_cast(timestamp AS TIMESTAMPTZ)), model, try_cast(prompt_tokens AS BIGINT), "
    "try_cast(completion_tokens AS BIGINT), try_cast(cached_tokens AS BIGINT), try_cast(ttft_ms AS DOUBLE) FROM "
    + _ALL_CAST,
    "parquet": "SELECT epoch_ms(timestamp), model, try_cast(prompt_tokens AS BIGINT), completion_tokens, "
    "cached_tokens, ttft_ms FROM read_parquet('{path}')",
}


def _matrix_cells() -> tuple[dict, list[str]]:
    """({cell id: cell} of the cells --matrix can run, the ids it runs by default): each format's clean file and its
    worst cell, the RFC CSV the issue names, and every cell of the test's quick and cover matrices."""
    sys.path.insert(0, str(ROOT))
    from tests.support.log_matrix import Cell
    from tests.support.log_matrix_cells import cover_cells, quick_cells

    values = ("text_count", "negative", "year_2999", "big_count")
    light = {
        "jsonl": ("malformed", "cut_tail", *values),
        "csv": ("malformed", "cut_tail", *values, "inf_ttft", "nan_ttft", "qbreak"),
        "rfc": ("malformed", "cut_tail", *values, "inf_ttft", "nan_ttft", "qbreak"),
        "parquet": (*values, "inf_ttft", "nan_ttft"),
    }
    default = []
    for fmt, defects in light.items():
        text = fmt != "parquet"
        default += [Cell(fmt), Cell(fmt, defects, crlf=text, bom=text, packing="gz" if text else "zst", far=True)]
    default.append(Cell("rfc", ("malformed", "qbreak"), crlf=True, bom=True, far=True))
    return {c.id: c for c in (*default, *quick_cells(), *cover_cells())}, [c.id for c in default]


def matrix_make_child(requests: int, folder: Path, ids: list[str]) -> None:
    """Write the cells into `folder` (tests/support/log_matrix.py) and add their truths to its truth.json."""
    from dataclasses import asdict

    from tests.support.log_matrix import LogMatrix

    cells, _ = _matrix_cells()
    folder.mkdir(parents=True, exist_ok=True)
    index = folder / "truth.json"
    known = json.loads(index.read_text()) if index.exists() else {}
    m = LogMatrix(folder, requests)
    for cell_id in ids:
        t = time.perf_counter()
        w = m.write(cells[cell_id])
        known[cell_id] = {
            "fmt": cells[cell_id].fmt,
            "file": w.path.name,
            "mapping": w.mapping,
            "truth": asdict(w.truth),
        }
        print(
            f"made {w.path.name} ({w.path.stat().st_size / 1e6:,.0f} MB) in {time.perf_counter() - t:.0f} s", flush=True
        )
        index.write_text(json.dumps(known))
    for base in folder.glob("base-*"):  # the unedited copies, kept only while the cells were made
        base.unlink()


def matrix(requests: int, reps: int, ids: list[str] | None, before: Path | None = None) -> None:
    """Each cell: `logs summarize --json` and DuckDB's same figures alternated `reps` times (with `before`, that
    checkout's `logs summarize` too); ours checked against the truth; the ratios and peak RSS printed."""
    cells, default = _matrix_cells()  # first: it puts the checkout's tests/ on the path
    from tests.support.log_matrix import Truth
    from tests.support.log_matrix_cells import mismatches

    ids = ids or default
    unknown = [i for i in ids if i not in cells]
    if unknown:
        raise SystemExit(f"unknown cell(s): {', '.join(unknown)}; e.g. {', '.join(default[:3])}")
    folder = OUT / f"matrix-{requests // 1000}k"
    index = folder / "truth.json"
    missing = [i for i in ids if i not in (json.loads(index.read_text()) if index.exists() else {})]
    if missing:  # in a child process, so the contenders do not inherit the RSS of the writing
        argv = [sys.executable, __file__, "--matrix-make", "--requests", str(requests), "--to", str(folder)]
        subprocess.run([*argv, "--cells", ",".join(missing)], check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    known = json.loads(index.read_text())
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {reps} reps each, alternated")
    print("targets: ours/DuckDB ≤ 1.3× on clean files, ≤ 1.5× on the worst cell, peak RSS ≤ 1,000 MB")
    for cell_id in ids:
        entry = known[cell_id]
        path = folder / entry["file"]
        argv = [str(Path(sys.executable).with_name("ttft-planner")), "logs", "summarize", "--json", str(path)]
        for field, column in (entry["mapping"] or {}).items():
            argv += ["--map", f"{field}={column}"]
        ours, duck, old = [], [], []
        try:
            for _ in range(reps):
                ours.append(_measured(argv))
                duck.append(_measured([sys.executable, __file__, "--matrix-same", entry["fmt"], "--file", str(path)]))
                if before is not None:
                    old.append(_measured(argv, before))
        except SystemExit as exc:  # a traceback or a refusal: said, and on to the next cell
            print(f"{cell_id:<72} {str(exc)[-300:]}", flush=True)
            continue
        truth = Truth(**{**entry["truth"], "named": tuple(map(tuple, entry["truth"]["named"]))})
        problems = sorted({p for o in ours for p in mismatches(truth, json.loads(o["stdout"]), path.name)})
        ratios = [o["wall_s"] / d["wall_s"] for o, d in zip(ours, duck, strict=True)]
        print(
            f"{cell_id:<72} n={truth.n:>10,} {'exact' if not problems else f'{len(problems)} differ'}  "
            f"ours {statistics.median(o['wall_s'] for o in ours):6.2f} s (min {min(o['wall_s'] for o in ours):.2f})  "
            f"DuckDB same figures {statistics.median(d['wall_s'] for d in duck):6.2f} s "
            f"(min {min(d['wall_s'] for d in duck):.2f})  ratio median {statistics.median(ratios):.2f}× "
            f"min {min(ratios):.2f}×  peak RSS ours {max(o['rss_mb'] for o in ours):,.0f} MB DuckDB "
            f"{max(d['rss_mb'] for d in duck):,.0f} MB",
            flush=True,
        )
        if old:
            was = sorted({p for o in old for p in mismatches(truth, json.loads(o["stdout"]), path.name)})
            print(
                f"{'':<72} before {statistics.median(o['wall_s'] for o in old):6.2f} s, ratio median "
                f"{statistics.median(o['wall_s'] / d['wall_s'] for o, d in zip(old, duck, strict=True)):.2f}×, "
                f"peak RSS {max(o['rss_mb'] for o in old):,.0f} MB, {'exact' if not was else f'{len(was)} differ'}",
                flush=True,
            )
        for problem in problems[:10]:
            print(f"    {problem[:200]}")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=5, help="fresh-process runs of each contender (alternated)")
    ap.add_argument("--only", default=",".join(FORMATS), help="comma-separated formats: " + ", ".join(FORMATS))
    ap.add_argument("--bad", action="store_true", help="also the twins with a BOM, a malformed and a truncated line")
    ap.add_argument(
        "--before",
        type=Path,
        help="also run `logs summarize` with the code of this checkout (e.g. a `git worktree` of an earlier "
        "commit), alternated with the others: the change's before and after in one run",
    )
    ap.add_argument("--child", choices=list(FORMATS), help=argparse.SUPPRESS)
    ap.add_argument("--file", help=argparse.SUPPRESS)
    ap.add_argument("--same", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--make", choices=list(FORMATS), help=argparse.SUPPRESS)
    ap.add_argument("--to", help=argparse.SUPPRESS)
    ap.add_argument("--matrix", action="store_true", help="run cells of the defect matrix instead (see above)")
    ap.add_argument("--cells", help="with --matrix: comma-separated cell ids (default: each format's clean and worst)")
    ap.add_argument("--matrix-make", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--matrix-same", choices=list(MATRIX_SAME), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.make:
        make_child(args.make, args.file, args.to)
        return
    if args.matrix_make:
        matrix_make_child(args.requests, Path(args.to), args.cells.split(","))
        return
    if args.matrix_same:
        same_figures(MATRIX_SAME[args.matrix_same].format(path=args.file), args.matrix_same == "parquet")
        return
    if args.matrix:
        OUT.mkdir(parents=True, exist_ok=True)
        for tree in (ROOT, args.before):
            if tree is not None:
                compileall.compile_dir(str(tree / "planner"), quiet=1)
        matrix(args.requests, args.reps, args.cells.split(",") if args.cells else None, args.before)
        return
    if args.child:
        (same_child if args.same else duckdb_child)(args.child, args.file, args.bad)
        return
    OUT.mkdir(parents=True, exist_ok=True)
    # Bytecode written first, as an installed package has it (a session with PYTHONDONTWRITEBYTECODE would otherwise
    # compile every changed module in every run).
    for tree in (ROOT, args.before):
        if tree is not None:
            compileall.compile_dir(str(tree / "planner"), quiet=1)
    src = base_jsonl(args.requests)
    rows = []
    load = os.getloadavg()[0]
    print(f"load average at start: {load:.1f} on {os.cpu_count()} CPUs; {args.reps} reps each, alternated")
    for fmt in args.only.split(","):
        path = format_file(fmt, src)
        variants = [(path, False)] + ([(bad_twin(path), True)] if args.bad and fmt != "parquet" else [])
        for p, bad in variants:
            rows.append(compare(fmt, p, args.reps, bad, args.before))
            r = rows[-1]
            was = f"  before {r['before_s']:6.2f} s, {r['before_rss_mb']:,.0f} MB" if r["before_s"] is not None else ""
            print(
                f"{r['format']:<14} n={r['n']:>10,} same={r['same']!s:<5} ours {r['ours_s']:6.2f} s "
                f"(min {r['ours_min_s']:.2f})  DuckDB {r['duck_s']:6.2f} s (min {r['duck_min_s']:.2f})  "
                f"ratio median {r['ratio_median']:.2f}× min {r['ratio_min']:.2f}×  "
                f"same figures {r['same_s']:6.2f} s: ours/same median {r['same_ratio_median']:.2f}× "
                f"min {r['same_ratio_min']:.2f}×  peak RSS ours {r['ours_rss_mb']:,.0f} MB DuckDB "
                f"{r['duck_rss_mb']:,.0f} MB same {r['same_rss_mb']:,.0f} MB{was}",
                flush=True,
            )
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
