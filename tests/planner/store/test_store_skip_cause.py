"""A skipped slot's cause is data (issue 30): probe_sample.skip_cause holds a SkipCause value, written by the worker's
skip rows, and filled by migration 0011 for the skips stored before it from their words, where the words are the
worker's own; on SQLite and PostgreSQL."""

from __future__ import annotations

import sqlalchemy as sa

from planner.endpoints.samples import SkipCause
from planner.store import open_store
from planner.store.endpoints import get_or_create_manual_endpoint
from planner.store.migrate import current_revision, head_revision
from planner.store.probes import insert_samples
from planner.worker.prober import skip_row
from planner.worker.scheduler import Scheduler

BEFORE = "0010_i16_rtt_request"  # the revision before skip_cause
KEY = "endpoint:1"


def _worker_words() -> list[tuple[str, SkipCause]]:
    """(error_detail, cause) of skips as the worker's scheduler words them: every cause, a long gap's first row with
    its count of earlier slots too."""
    s = Scheduler(max_skips_per_gap=2)
    job = s.add(KEY, 1000, 20_000, last_slot_ms=2_000, crashed_until_ms=9_000, jitter=False)
    out: list[tuple[str, SkipCause]] = []

    def due(now_ms: int) -> None:
        out.extend((a.reason, a.cause) for a in s.due(now_ms) if a.action == "skip" and a.cause is not None)

    due(job.next_slot_ms)  # the gap since the last stored slot (crashed, then not running); this slot runs
    due(job.next_slot_ms)  # its probe still runs
    s.done(KEY)
    due(job.next_slot_ms + 600)  # woke 600 ms late, over half the interval
    due(job.next_slot_ms + 5_000)  # slots passed over; the newest runs
    s.done(KEY)
    s.pause(KEY)
    due(job.next_slot_ms)
    return out


def test_the_words_cover_every_cause_with_and_without_particulars():
    words = _worker_words()
    assert {c for _, c in words} == set(SkipCause)
    with_count = {c for w, c in words if w.endswith("earlier slots not recorded)")}
    assert with_count == {SkipCause.CRASHED, SkipCause.NOT_RUNNING, SkipCause.PASSED_OVER}
    assert all(w.startswith(c.text) for w, c in words)


def test_the_worker_stores_a_skips_cause_beside_its_words(engine):
    endpoint_id = get_or_create_manual_endpoint(engine, "http://127.0.0.1:9/v1", "m", "openai-chat").id
    assert endpoint_id is not None
    rows = [skip_row(endpoint_id, "", 1_000 + i, 5_000, w, c) for i, (w, c) in enumerate(_worker_words())]
    assert insert_samples(engine, rows) == len(rows)
    with engine.connect() as conn:
        stored = conn.execute(sa.text("SELECT error_detail, skip_cause FROM probe_sample ORDER BY scheduled_at_ms"))
        assert [tuple(r) for r in stored] == [(w, c.value) for w, c in _worker_words()]


def test_the_upgrade_fills_the_cause_of_skips_stored_before_it_from_their_words(db_url):
    old = open_store(db_url, revision=BEFORE)
    words: list[tuple[str, str | None, str | None]] = [(w, "skipped", c.value) for w, c in _worker_words()]
    words += [
        ("late by a while", "skipped", None),  # not the worker's words: not guessed
        ("Previous probe still running.", "skipped", None),
        ("missed: the worker was not running, then some", "skipped", None),
        ("previous probe still running", "scheduled", None),  # only skipped rows have a cause
    ]
    with old.begin() as conn:
        endpoint_id = _endpoint(conn)
        for i, (detail, kind, _) in enumerate(words):
            conn.execute(
                sa.text(
                    "INSERT INTO probe_sample (endpoint_id, vantage, kind, scheduled_at_ms, started_at_ms, ok,"
                    " error_class, error_detail, attempts, retry_wait_ms, conn_reused, buffered, cached_series)"
                    " VALUES (:e, '', :kind, :slot, :slot, false, 'skipped', :detail, 1, 0, false, false, false)"
                ),
                {"e": endpoint_id, "kind": kind, "slot": 1_000 + i, "detail": detail},
            )
        conn.execute(  # a skip with no words at all
            sa.text(
                "INSERT INTO probe_sample (endpoint_id, vantage, kind, scheduled_at_ms, started_at_ms, ok,"
                " attempts, retry_wait_ms, conn_reused, buffered, cached_series)"
                " VALUES (:e, '', 'skipped', 9999, 9999, false, 1, 0, false, false, false)"
            ),
            {"e": endpoint_id},
        )
    old.dispose()
    new = open_store(db_url)
    assert current_revision(new) == head_revision()
    with new.connect() as conn:
        got = [
            tuple(r)
            for r in conn.execute(
                sa.text("SELECT error_detail, kind, skip_cause FROM probe_sample ORDER BY scheduled_at_ms")
            )
        ]
    new.dispose()
    assert got == [*words, (None, "skipped", None)]  # the words themselves are kept as they were


def _endpoint(conn: sa.Connection) -> int:
    """One endpoint row in a database at an older revision, written with the columns every revision since 0002 has."""
    conn.execute(
        sa.text(
            "INSERT INTO endpoint (name, provider, region, protocol, base_url, model, api_key_env, interval_s,"
            " timeout_s, prompt_tokens, max_tokens, connection_policy, enabled, vantage, simulated, created_at_ms,"
            " updated_at_ms) VALUES ('e', 'p', 'r', 'openai-chat', 'http://127.0.0.1:9/v1', 'm', '', 60, 30, 100, 8,"
            " 'keep-alive', true, '', false, 0, 0)"
        )
    )
    return int(conn.execute(sa.text("SELECT id FROM endpoint WHERE name = 'e'")).scalar_one())
