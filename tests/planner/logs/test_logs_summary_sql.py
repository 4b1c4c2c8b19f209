"""The engine's summary (planner.logs.summary_sql) whichever way the requests reach it: batches appended to a
RequestTable, a file inserted by DuckDB, or a frame; and `logs summarize` computing it without pandas.

Every figure is held to the independent plain-Python summary (tests/support/log_summary_reference.py); the summary of
a file read into the engine (the command's path) equals the summary of the same file read into a frame (the page's).
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

from planner.logs import ReaderPolicy, read_logs, summarize
from planner.logs.load import RequestTable, connect
from planner.logs.summary_sql import summarize_table
from tests.support.log_summary_reference import reference_summary
from tests.support.log_summary_reference import same as _same

SAMPLES = Path(__file__).resolve().parents[3] / "assets" / "sample_logs"


def _both(frame: pd.DataFrame, tz: str, workday: str = "09:00-18:00") -> tuple[dict, dict]:
    """(the independent summary of `frame`, the engine's over the same requests appended in several batches)."""
    con = duckdb.connect()
    table = RequestTable(con)
    for start in range(0, len(frame), 700):  # several batches, as the readers hand them over
        table.append(frame.iloc[start : start + 700])
    engine_side = summarize_table(con, table, tz, workday).to_dict()
    return reference_summary(frame, tz, workday), engine_side


def test_batches_appended_to_a_request_table_give_the_summary_of_the_whole_frame():
    from tests.planner.logs.test_logs_summary import generated_traffic

    frame = generated_traffic(n=2_000, seed=9)
    for tz in ("Europe/Berlin", "UTC"):
        reference, engine_side = _both(frame, tz)
        _same(reference, engine_side, tz)
        _same(summarize(frame, tz=tz).to_dict(), engine_side, f"{tz}: a frame, summarised")


def test_a_single_request_and_one_within_the_hour():
    base = {
        "model": "m",
        "cached_tokens": 0,
        "output_tokens": 3,
        "ttft_ms": np.nan,
        "duration_ms": np.nan,
        "source": "x",
    }
    one = pd.DataFrame([{**base, "ts_ms": 1795165200000, "prompt_tokens": 10}])
    _same(*_both(one, "UTC"), "one")
    two = pd.DataFrame(
        [{**base, "ts_ms": 1795165200000, "prompt_tokens": 10}, {**base, "ts_ms": 1795165260000, "prompt_tokens": 20}]
    )
    _same(*_both(two, "Europe/Berlin"), "two")


def _row_read(paths, tz: str):
    """What the Python record reader makes of the files, every record: the engine's independent twin."""
    return read_logs(paths, tz=tz, policy=ReaderPolicy(engine="python"))


def _engine_read(paths, tz: str, workday: str = "09:00-18:00"):
    con = connect()
    table = RequestTable(con)
    res = read_logs(paths, tz=tz, sink=table)
    return res, summarize_table(con, table, tz, workday).to_dict()


def _files(tmp_path: Path) -> list[Path]:
    """Every shipped sample (but the one that needs a mapping), a CSV with bad rows, a Parquet twin of the plain CSV."""
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    out = [
        p
        for p in sorted(SAMPLES.iterdir())
        if p.suffix in (".jsonl", ".csv", ".json") and p.name != "gateway_custom_columns.csv"
    ]
    from tests.planner.logs.test_logs_no_cliff import _csv_rows

    bad = tmp_path / "mixed-and-bad.csv"  # naive and offset times, a quoted line break, six bad rows
    bad.write_text("\n".join(_csv_rows()) + "\n")
    plain_bad = tmp_path / "plain-and-bad.csv"  # the same, each record on one line: the engine names them
    plain_bad.write_text("\n".join(r.replace("\n", " ") for r in _csv_rows()) + "\n")
    twin = tmp_path / "requests.parquet"
    pq.write_table(pacsv.read_csv(SAMPLES / "requests.csv"), twin)
    return [*out, bad, plain_bad, twin, _litellm_with_bad_rows(tmp_path)]


def _litellm_with_bad_rows(tmp_path: Path) -> Path:
    """The LiteLLM sample, one line a record, with the rows its reader rejects or reads its slower way."""
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO((SAMPLES / "litellm_spend_logs.csv").read_text(), newline="")))
    for r in rows:
        r["messages"] = r["messages"].replace("\n", " ")
    rows[3]["status"] = "failure"
    rows[5]["metadata"] = "{not json"  # no cached count, not a bad row
    rows[7]["metadata"] = '{"additional_usage_values": {"prompt_tokens_details": {"cached_tokens": "12"}}}'
    rows[9]["completionStartTime"] = "2026-11-16T08:00:00.000Z"  # before startTime
    rows[11]["completionStartTime"] = ""
    rows[13]["model"] = ""
    rows[13]["model_group"] = "group-a"  # not a column of the sample: added below
    rows[15]["prompt_tokens"] = "99999999999999999999999"
    rows[17]["startTime"] = "2026-11-16T10:02:27"  # no zone: the reader's
    rows[19]["prompt_tokens"] = "abc"
    rows[21]["metadata"] = '{"usage_object": {"prompt_tokens_details": {"cached_tokens": 40}}}'
    rows[23]["metadata"] = '{"additional_usage_values": {"prompt_tokens_details": {"cached_tokens": 999999}}}'
    rows[25]["endTime"] = "not a time"
    path = tmp_path / "litellm-plain-and-bad.csv"
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=[*rows[0], "model_group"], restval="")
        w.writeheader()
        w.writerows(rows)
    return path


@pytest.mark.parametrize("tz", ["UTC", "Europe/Berlin"])
def test_reading_into_the_engine_gives_the_summary_and_the_rejects_of_the_python_record_reader(tmp_path, tz):
    for path in _files(tmp_path):
        framed = _row_read([path], tz)
        res, engine_side = _engine_read([path], tz)
        _same(summarize(framed.frame, tz=tz).to_dict(), engine_side, path.name)
        assert [(r.line_no, r.reason) for r in res.rejected] == [(r.line_no, r.reason) for r in framed.rejected]
        assert (res.formats, res.notes, res.n_read) == (framed.formats, framed.notes, len(framed.frame))


def test_bad_rows_of_a_csv_a_record_a_line_come_back_from_the_engine_with_their_lines(tmp_path):
    # The engine inserts the good rows and hands back only the others, each with its text and line, for the Python
    # record reader to name or read: as it names them reading every record.
    files = _files(tmp_path)
    plain, litellm = files[-3], files[-1]
    for path in (plain, litellm):
        framed = _row_read([path], "Europe/Berlin")
        res, engine_side = _engine_read([path], "Europe/Berlin")
        assert [(r.line_no, r.reason) for r in res.rejected] == [(r.line_no, r.reason) for r in framed.rejected]
        assert len(framed.rejected) == 6 and res.n_read == len(framed.frame)
        _same(summarize(framed.frame, tz="Europe/Berlin").to_dict(), engine_side, path.name)


_SUMMARIZE_THEN_SAY_WHAT_LOADED = """
import json, sys
from planner.cli import main
sys.argv[0] = "ttft-planner"
try:
    main()
except SystemExit:
    pass
LOADED = [m for m in ("pandas", "numpy", "pyarrow") if type(sys.modules.get(m)).__name__ == "module"]
print("LOADED", json.dumps(LOADED))
"""


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_logs_summarize_reads_and_summarises_without_loading_pandas_numpy_or_pyarrow(tmp_path, kind):
    """The command line's summary of a CSV or a Parquet file is DuckDB's alone: pandas, numpy and pyarrow (half a
    second of a fresh process) are never loaded, in JSON or in text, and the figures are the ones read through
    pandas."""
    import subprocess
    import sys

    rows = ["timestamp,model,prompt_tokens,cached_tokens,output_tokens"]
    rows += [f"2026-03-0{1 + i % 5}T{9 + i % 8:02d}:00:{i % 60:02d}Z,m{i % 2},{100 + 37 * i},0,{i}" for i in range(200)]
    path = tmp_path / "log.csv"
    path.write_text("\n".join(rows) + "\n")
    if kind == "parquet":
        import pyarrow.csv as pacsv
        import pyarrow.parquet as pq

        pq.write_table(pacsv.read_csv(path), tmp_path / "log.parquet")
        path = tmp_path / "log.parquet"
    outputs = {}
    for flag in ("--json", "--tz=UTC"):
        argv = [sys.executable, "-c", _SUMMARIZE_THEN_SAY_WHAT_LOADED, "logs", "summarize", flag, str(path)]
        done = subprocess.run(argv, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        outputs[flag], loaded = done.stdout.rsplit("LOADED ", 1)
        assert json.loads(loaded) == [], f"logs summarize {flag} loaded {loaded.strip()}"
    assert "200 requests" in outputs["--tz=UTC"]
    got, expected = json.loads(outputs["--json"]), reference_summary(read_logs([path]).frame)
    assert got["n"] == 200
    _same({k: got[k] for k in expected}, expected, "logs summarize --json")


def test_the_percentiles_picked_from_a_histogram_are_quantile_disc_s_for_every_sample_size():
    """Whole-log token percentiles come from a histogram of the column and a running count (engine._ranked), not
    from quantile_disc: the same value at every rank, ties and NULLs included, under a filter, and none for none."""
    from planner.logs.summary_sql import _from_ranked, _pcts, _percentiles, _ranked

    rng = np.random.default_rng(11)
    con = duckdb.connect()
    for n in [0, *range(1, 130), 199, 200, 201, 999, 1000, 1001, 20_021]:
        values = rng.integers(0, max(2, n // 3), n).tolist()  # many ties
        values = [None if i % 17 == 5 else v for i, v in enumerate(values)]
        flags = (rng.random(n) < 0.3).tolist()
        con.execute(
            "CREATE OR REPLACE TABLE t AS SELECT unnest($v::INTEGER[]) AS v, unnest($f::BOOLEAN[]) AS f",
            {"v": values, "f": flags},
        )
        got = _from_ranked(con.execute(_ranked("v", "t", ("true", "f", "false"))).fetchall()[0])
        row = con.execute(f"SELECT {_pcts('v')}, {_pcts('v', 'f')}, {_pcts('v', 'false')} FROM t").fetchall()[0]
        expected = [_percentiles(*row[i : i + 3]) for i in range(0, 9, 3)]
        assert got == expected, n


def test_many_requests_at_each_instant_give_the_cold_curve_of_every_arrival():
    """The cold-start curve takes its gaps between distinct instants when requests share them (engine._cold): with
    many requests a second, with and without durations, either way of taking the gaps gives the curve replayed over
    every arrival."""
    from planner.logs.exposure import DEFAULT_WINDOWS_S
    from planner.logs.summary_sql import _cold

    rng = np.random.default_rng(5)
    n = 6_000
    # whole seconds with bursts and quiet stretches: most instants hold several requests
    ts = np.sort(1795165200000 + 1000 * np.cumsum(rng.choice([0, 0, 0, 1, 2, 15, 40, 700], n)))
    frame = pd.DataFrame(
        {
            "ts_ms": ts,
            "model": "m",
            "prompt_tokens": rng.integers(0, 5_000, n),
            "cached_tokens": 0,
            "output_tokens": rng.integers(0, 500, n),
            "ttft_ms": np.nan,
            "duration_ms": np.where(rng.random(n) < 0.3, np.nan, rng.gamma(2.0, 20_000.0, n)),
            "source": "ties.csv",
        }
    ).sample(frac=1.0, random_state=3)  # not in arrival order
    # and ms times that still share instants (a quarter-second clock): the summary's gate takes the same path
    quarter = frame.assign(ts_ms=frame.ts_ms + 250 * rng.integers(0, 4, n))
    reference, engine_side = _both(quarter, "UTC")
    _same(reference, engine_side, "ms times in bursts")
    for durations in (True, False):
        f = frame if durations else frame.assign(duration_ms=np.nan)
        reference, engine_side = _both(f, "UTC")
        _same(reference, engine_side, f"durations={durations}")
        expected = reference["cold_exposure"]
        assert len({r["trace_cold_fraction"] for r in expected}) > 3
        con = duckdb.connect()
        table = RequestTable(con)
        table.append(f)
        table.flush()
        rate = reference["mean_rate_per_s"]
        for instants in (1, n):  # the distinct instants' gaps, every arrival's
            got = _cold(con, table.name, DEFAULT_WINDOWS_S, n, rate, durations, instants).records
            assert [r["trace_cold_fraction"] for r in got] == [r["trace_cold_fraction"] for r in expected], instants
