"""A LiteLLM proxy's spend logs read into the store: a real PostgreSQL, its schema made by LiteLLM's own migrations
(the litellm-proxy-extras package the proxy runs), filled with requests, synced, cut off, synced again."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from planner.cli import cli
from planner.sources import litellm
from planner.sources.sync import sync_source
from planner.store.sources import SourceKind, add_source, get_source, list_sources, load_source_requests

pytestmark = pytest.mark.postgres

T0 = dt.datetime(2026, 11, 16, 9, 0, 0)  # LiteLLM writes UTC times without a zone


def _litellm_schema(url: str) -> None:
    import litellm_proxy_extras

    migrations = sorted((Path(litellm_proxy_extras.__file__).parent / "migrations").glob("*/migration.sql"))
    assert len(migrations) > 100, "litellm-proxy-extras ships its migrations"
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as conn:
        for sql in migrations:
            conn.execute(sql.read_text())


@pytest.fixture(scope="session")
def litellm_template(pg_server) -> str:
    return pg_server.make_template(f"litellm_{os.getpid()}", _litellm_schema)


@pytest.fixture
def proxy_db(pg_server, litellm_template):
    name = f"proxy_{os.getpid()}_{os.urandom(3).hex()}"
    url = pg_server.fresh_database(name, template=litellm_template)
    yield url.replace("postgresql+psycopg://", "postgresql://").replace("planner@", "planner:s3cret-pw@")
    pg_server.drop_database(name)


def _insert(dsn: str, rows: list[dict]) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for r in rows:
            conn.execute(
                'INSERT INTO "LiteLLM_SpendLogs" (request_id, call_type, "startTime", "endTime", '
                '"completionStartTime", model, api_base, prompt_tokens, completion_tokens, total_tokens, metadata) '
                "VALUES (%s, 'acompletion', %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    r["id"],
                    r["start"],
                    r["end"],
                    r.get("first"),
                    r.get("model", "gpt-4.1-mini"),
                    r.get("api_base", "https://api.openai.com/v1"),
                    r["prompt"],
                    r["output"],
                    r["prompt"] + r["output"],
                    json.dumps(r.get("metadata", {})),
                ),
            )


def _requests(n: int, start_s: int = 0) -> list[dict]:
    out = []
    for i in range(start_s, start_s + n):
        start = T0 + dt.timedelta(seconds=i)
        out.append(
            {
                "id": f"chatcmpl-{i:06d}",
                "start": start,
                "first": start + dt.timedelta(milliseconds=150 + i % 300),
                "end": start + dt.timedelta(milliseconds=2000 + i),
                "prompt": 1000 + i,
                "output": 10 + i % 50,
                "metadata": {"additional_usage_values": {"prompt_tokens_details": {"cached_tokens": i % 700}}},
            }
        )
    return out


def _source(engine, dsn: str, monkeypatch, name: str = "prod"):
    monkeypatch.setenv("LITELLM_TEST_DSN", dsn)
    add_source(engine, name, SourceKind.LITELLM, "LITELLM_TEST_DSN")
    return get_source(engine, name)


def test_a_sync_reads_every_request_with_its_ttft_tokens_and_cached_share(engine, proxy_db, monkeypatch):
    rows = _requests(250)
    rows.append(
        {
            "id": "no-first-token",
            "start": T0 + dt.timedelta(seconds=999),
            "end": T0 + dt.timedelta(seconds=1000),
            "first": None,
            "model": "",
            "api_base": None,
            "prompt": 5,
            "output": 0,
        }
    )
    _insert(proxy_db, rows)
    src = _source(engine, proxy_db, monkeypatch)
    rep = sync_source(engine, src, page_rows=60)
    assert (rep.read, rep.new, rep.pages) == (251, 251, 5)
    got = {r["request_id"]: r for r in load_source_requests(engine, src.id)}
    r7 = got["chatcmpl-000007"]
    epoch_ms = int(T0.replace(tzinfo=dt.UTC).timestamp() * 1000)
    assert r7["ts_ms"] == epoch_ms + 7_000
    assert (r7["ttft_ms"], r7["duration_ms"]) == (157.0, 2007.0)
    assert (r7["prompt_tokens"], r7["cached_tokens"], r7["output_tokens"]) == (1007, 7, 17)
    assert r7["model"] == "gpt-4.1-mini" and r7["api_base"] == "https://api.openai.com/v1"
    bare = got["no-first-token"]
    assert bare["ttft_ms"] is None and bare["model"] == "" and bare["cached_tokens"] == 0
    assert get_source(engine, "prod").n_requests == 251


def test_a_sync_cut_off_resumes_and_rows_written_later_arrive_once(engine, proxy_db, monkeypatch):
    _insert(proxy_db, _requests(300))
    src = _source(engine, proxy_db, monkeypatch)
    first = sync_source(engine, src, page_rows=50, max_pages=2)  # cut off after two pages
    assert first.new == 100 and get_source(engine, "prod").watermark_id == "chatcmpl-000099"
    # new rows, and a long request that started before the watermark but was written only now (inside the overlap)
    late = _requests(1, start_s=50)[0] | {"id": "late-long-request"}
    _insert(proxy_db, _requests(40, start_s=300) + [late])
    again = sync_source(engine, get_source(engine, "prod"), page_rows=50)
    stored = load_source_requests(engine, src.id)
    ids = [r["request_id"] for r in stored]
    assert len(ids) == len(set(ids)) == 341  # 300 + 40 + the late one: nothing lost, nothing twice
    assert again.new == 241 and "late-long-request" in ids
    assert sync_source(engine, get_source(engine, "prod"), page_rows=50).new == 0  # a sync with nothing new


def test_the_reader_cannot_write_and_a_table_without_the_columns_is_named(engine, proxy_db, monkeypatch):
    reader = litellm.connect(proxy_db)
    with pytest.raises(sa.exc.DBAPIError, match="read-only transaction"), reader.begin() as conn:
        conn.execute(sa.text('DELETE FROM "LiteLLM_SpendLogs"'))
    reader.dispose()
    with psycopg.connect(proxy_db, autocommit=True) as conn:
        conn.execute('ALTER TABLE "LiteLLM_SpendLogs" DROP COLUMN "completionStartTime"')
    src = _source(engine, proxy_db, monkeypatch)
    with pytest.raises(litellm.LiteLLMError, match="completionStartTime"):
        litellm.describe(litellm.connect(proxy_db))
    with pytest.raises(litellm.LiteLLMError):
        sync_source(engine, src)
    after = get_source(engine, "prod")
    assert after.n_requests == 0 and after.last_error and "completionStartTime" in after.last_error
    assert "s3cret-pw" not in after.last_error  # the URL in a message is redacted


def test_the_commands_connect_sync_and_never_keep_the_password(sqlite_store_url, proxy_db, monkeypatch):
    store_url = sqlite_store_url  # the store's dialects are the engine tests' above
    _insert(proxy_db, _requests(30))
    monkeypatch.setenv("LITELLM_DSN", proxy_db)
    run = lambda *a: CliRunner().invoke(cli, ["sources", *a, "--database-url", store_url])  # noqa: E731
    assert run("add", "prod", "--litellm-dsn-env", "LITELLM_DSN").exit_code == 0
    tested = run("test", "prod")
    assert tested.exit_code == 0 and "holds 30 requests" in tested.output
    synced = run("sync", "prod", "--json")
    assert synced.exit_code == 0, synced.output
    d = json.loads(synced.output)
    assert d["new"] == 30 and d["ttft_ms"]["p50"]["value"] == pytest.approx(150 + 14)  # nearest-rank of 150…179
    listed = run("list")
    assert "30 requests" in listed.output and "$LITELLM_DSN" in listed.output
    with sa.create_engine(store_url).connect() as conn:
        dump = " ".join(
            str(v) for t in ("source", "source_request") for r in conn.execute(sa.text(f"SELECT * FROM {t}")) for v in r
        )
    assert "s3cret-pw" not in dump and "127.0.0.1" not in dump
    monkeypatch.delenv("LITELLM_DSN")
    unset = run("sync", "prod")
    assert unset.exit_code == 1 and "$LITELLM_DSN is not set" in unset.output
    assert len(list_sources(sa.create_engine(store_url))) == 1


def test_a_source_reads_as_a_request_frame_the_log_summary_takes(engine, proxy_db, monkeypatch):
    from planner.logs import summarize
    from planner.logs.result import COLUMNS
    from planner.store.sources import load_source_frame

    _insert(proxy_db, _requests(120))
    src = _source(engine, proxy_db, monkeypatch)
    sync_source(engine, src)
    frame = load_source_frame(engine, src.id)
    assert list(frame.columns) == list(COLUMNS) and len(frame) == 120 and frame["ts_ms"].is_monotonic_increasing
    s = summarize(frame)
    # TTFT of request i is 150 + i ms: p95 of 0…119 by nearest rank is the 114th value, 150 + 113
    assert s.ttft["p95"].value == 263.0 and s.ttft["p95"].n == 120
    assert s.prompt["max"].value == 1119 and set(frame["source"]) == {"https://api.openai.com/v1"}


def test_the_worker_syncs_each_period_and_a_failing_source_does_not_stop_it(engine, proxy_db, monkeypatch):
    from tests.support.fake_clock import FakeClock
    from tests.support.worker_driver import drive, until

    _insert(proxy_db, _requests(40))
    good = _source(engine, proxy_db, monkeypatch)
    add_source(engine, "unset", SourceKind.LITELLM, "UNSET_LITELLM_DSN_OF_THE_WORKER_TEST")
    clock = FakeClock()

    async def body(worker):
        syncs = worker.source_syncs
        await until(lambda: syncs.passes >= 1, "a first pass over the sources")
        first = len(load_source_requests(engine, good.id))
        _insert(proxy_db, _requests(25, start_s=40))
        passes = syncs.passes
        clock.advance(300_000)  # one period on
        await until(lambda: syncs.passes > passes, "a second pass, one period on")
        return first, len(load_source_requests(engine, good.id))

    first, second = drive(engine, body, clock=clock, source_sync_s=300.0)
    assert (first, second) == (40, 65)
    assert "UNSET_LITELLM_DSN_OF_THE_WORKER_TEST is not set" in (get_source(engine, "unset").last_error or "")


def test_a_count_out_of_range_leaves_the_row_out_by_name(engine, proxy_db, monkeypatch):
    rows = _requests(3)
    rows[1]["metadata"] = {"additional_usage_values": {"prompt_tokens_details": {"cached_tokens": 1e300}}}
    rows[2]["prompt"] = 2_000_000_000  # over 10⁹ tokens: not a count
    _insert(proxy_db, rows)
    rep = sync_source(engine, _source(engine, proxy_db, monkeypatch))
    assert rep.new == 1 and sorted(i for i, _ in rep.left_out) == ["chatcmpl-000001", "chatcmpl-000002"]
