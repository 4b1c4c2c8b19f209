"""Logs in object storage: `logs summarize s3://bucket/prefix/*.parquet` against a real S3-compatible server.

The server is moto's (in server mode, on a local port): the same HTTP API as S3, so the product's own S3 client
(pyarrow's) lists, matches and streams the objects as it would from AWS.
"""

from __future__ import annotations

import datetime as dt
import json
import socket

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from planner.cli import cli
from planner.percentiles import nearest_rank_index

DAYS = ("2026-11-16", "2026-11-17", "2026-11-18")
SECRET = "not-a-real-secret-key"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def s3_server():
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture
def bucket(s3_server, monkeypatch):
    """A bucket holding a day of requests per daily prefix (Parquet), and objects that are not logs."""
    import boto3

    for key, value in {
        "AWS_ENDPOINT_URL": s3_server,
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(key, value)
    s3 = boto3.client("s3", endpoint_url=s3_server)
    s3.create_bucket(Bucket="team-logs")
    prompts: list[int] = []
    for d, day in enumerate(DAYS):
        n = 40 + 10 * d
        day_prompts = [100 + 37 * i + 1000 * d for i in range(n)]
        prompts += day_prompts
        table = pa.table(
            {
                "timestamp": pa.array([f"{day}T09:{i // 60:02d}:{i % 60:02d}Z" for i in range(n)]),
                "model": ["gpt-4.1"] * n,
                "prompt_tokens": day_prompts,
                "output_tokens": [10] * n,
            }
        )
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink)
        s3.put_object(Bucket="team-logs", Key=f"daily/{day}/requests.parquet", Body=sink.getvalue().to_pybytes())
    s3.put_object(Bucket="team-logs", Key="daily/README.txt.bak", Body=b"not a log")
    return prompts


def test_a_prefix_of_daily_parquet_files_is_summarised_from_the_s3_server(bucket):
    r = CliRunner().invoke(cli, ["logs", "summarize", "s3://team-logs/daily/*/*.parquet", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    prompts = sorted(bucket)
    assert d["n"] == len(prompts) == 150
    for p, key in ((0.5, "p50"), (0.95, "p95"), (0.99, "p99")):
        assert d["prompt_tokens"][key]["value"] == prompts[nearest_rank_index(p, len(prompts))]
    first = dt.datetime(2026, 11, 16, 9, tzinfo=dt.UTC)
    assert d["first_ts_ms"] == first.timestamp() * 1000  # the first day is in
    assert SECRET not in r.output


def test_a_url_that_names_nothing_is_a_usage_error_naming_it(bucket):
    r = CliRunner().invoke(cli, ["logs", "summarize", "s3://team-logs/weekly/*.parquet"])
    assert r.exit_code == 2
    assert "s3://team-logs/weekly/*.parquet: the pattern matches no log object" in r.output
    r = CliRunner().invoke(cli, ["logs", "summarize", "s3://team-logs/monthly/"])
    assert r.exit_code == 2 and "s3://team-logs/monthly/: no such object or prefix" in r.output
    assert SECRET not in r.output
