"""`logs import` streams CSV, Parquet and public traces into the store a batch at a time (SQLite and PostgreSQL).

What a user would notice: the streamed upload holds exactly the rows, formats and mapping that reading the
whole file first stores, and a bad row still ends in an upload without it, with the row named by line number.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from planner.cli import cli
from planner.logs import ReaderPolicy, read_logs
from planner.logs.load import RequestTable, connect
from planner.store import open_store
from planner.store.logs import list_uploads, load_upload_frame, save_upload

SAMPLES = Path(__file__).resolve().parents[3] / "assets" / "sample_logs"
BATCH_ROWS = 100
N_REQUESTS = 450
MAP = ("ts=time", "model=model_name", "prompt_tokens=in_tok", "cached_tokens=cache_tok", "output_tokens=out_tok")
MAPPING = dict(m.split("=") for m in MAP)


def _requests(n: int) -> dict[str, list]:
    return {
        "time": [f"2024-05-10T{9 + i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z" for i in range(n)],
        "model_name": [("gpt-4o", "llama-3-70b", "gpt-4o-mini")[i % 3] for i in range(n)],
        "in_tok": [100 + (i * 37) % 4000 for i in range(n)],
        "cache_tok": [(i * 11) % 90 for i in range(n)],
        "out_tok": [5 + (i * 13) % 700 for i in range(n)],
    }


def _csv(path: Path, cols: dict[str, list]) -> Path:
    lines = [",".join(cols)] + [",".join(str(v) for v in row) for row in zip(*cols.values(), strict=True)]
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
    return path


def _parquet(path: Path, cols: dict[str, list]) -> Path:
    table = pa.table(cols)
    table = table.set_column(0, "time", pa.array([c.replace("Z", "") for c in cols["time"]]).cast(pa.timestamp("ms")))
    pq.write_table(table, path)
    return path


def _import(store_url: str, *args) -> str:
    r = CliRunner().invoke(cli, ["logs", "import", *map(str, args), "--database-url", store_url])
    assert r.exit_code == 0, r.output
    return r.stdout


CASES = {
    "mapped csv": (lambda d: _csv(d / "requests.csv", _requests(N_REQUESTS)), [f"--map={m}" for m in MAP]),
    "mapped csv.gz": (lambda d: _csv(d / "requests.csv.gz", _requests(N_REQUESTS)), [f"--map={m}" for m in MAP]),
    "parquet": (lambda d: _parquet(d / "requests.parquet", _requests(N_REQUESTS)), [f"--map={m}" for m in MAP]),
    "burstgpt": (lambda d: SAMPLES / "burstgpt_synthetic.csv", ["--start", "2024-05-10"]),
    "azure 2023": (lambda d: SAMPLES / "azure_code_2023.csv", []),
}


@pytest.mark.parametrize("case", CASES)
def test_a_streamed_import_stores_exactly_what_reading_the_whole_file_stores(case, store_url, tmp_path):
    make, args = CASES[case]
    path = make(tmp_path)
    opts = dict(a.removeprefix("--map=").split("=") for a in args if a.startswith("--map="))
    start = args[1] if args[:1] == ["--start"] else None
    table = RequestTable(connect(keep_order=True))
    read_logs([path], mapping=opts or None, start=start, sink=table)
    assert sum(1 for _ in table.batches(BATCH_ROWS)) >= 2  # stored a batch at a time, one held at a time

    stdout = _import(store_url, path, *args)
    whole = read_logs([path], mapping=opts or None, start=start)
    engine = open_store(store_url)
    whole_id = save_upload(engine, "whole", whole)
    assert stdout == f"stored upload 1: {len(whole.frame):,} requests, 0 rejected\n"
    got, want = {u.id: u for u in list_uploads(engine)}[1], {u.id: u for u in list_uploads(engine)}[whole_id]
    assert (got.name, got.n_requests, got.n_rejected, got.formats) == (path.name, *[want.n_requests, 0, want.formats])
    assert (got.first_ts_ms, got.last_ts_ms, got.tokens_estimated) == (want.first_ts_ms, want.last_ts_ms, False)
    got_rows, want_rows = load_upload_frame(engine, 1), load_upload_frame(engine, whole_id)
    assert len(got_rows) == len(whole.frame) >= 2 * BATCH_ROWS
    assert got_rows.astype(str).values.tolist() == want_rows.astype(str).values.tolist()  # row for row
    engine.dispose()


def test_a_streamed_csv_stores_what_the_python_record_reader_stores(sqlite_store_url, tmp_path):
    path = _csv(tmp_path / "requests.csv", _requests(N_REQUESTS))
    _import(sqlite_store_url, path, *[f"--map={m}" for m in MAP])
    engine = open_store(sqlite_store_url)
    save_upload(engine, "rows", read_logs([path], mapping=MAPPING, policy=ReaderPolicy(engine="python")))
    got, want = load_upload_frame(engine, 1), load_upload_frame(engine, 2)
    assert got.astype(str).values.tolist() == want.astype(str).values.tolist()
    engine.dispose()


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_a_bad_row_past_the_first_batch_is_named_and_nothing_is_stored_twice(kind, store_url, tmp_path):
    cols = _requests(N_REQUESTS)
    bad = 3 * BATCH_ROWS + 7  # index of the bad request
    if kind == "csv":
        cols["in_tok"][bad] = -4
        path, where = _csv(tmp_path / "requests.csv", cols), f":{bad + 2}"  # line 1 is the header
    else:
        cols["in_tok"][bad] = None
        path, where = _parquet(tmp_path / "requests.parquet", cols), f" row {bad + 1}"  # rows, numbered from 1
    stdout = _import(store_url, path, *[f"--map={m}" for m in MAP])
    assert f": {N_REQUESTS - 1:,} requests, 1 rejected\nfirst rejected: {path.name}{where}: " in stdout
    engine = open_store(store_url)
    assert [u.n_requests for u in list_uploads(engine)] == [N_REQUESTS - 1]
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM log_request").scalar() == N_REQUESTS - 1
    engine.dispose()
