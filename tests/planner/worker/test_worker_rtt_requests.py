"""RTT requests (issue 16): the Regions page queues "measure these targets from vantage V", the worker of V claims
each exactly once, measures real local TCP/HTTP targets and stores the samples — on SQLite and PostgreSQL. Also the
worker's collaborators: none imports the runner, and an idle worker starts no alert thread five times a second (on a
clock the test moves, tests/support/fake_clock.py). The worker runs in-process until the event a test waits for
(tests/support/worker_driver.py)."""

from __future__ import annotations

import ast
import socket
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from planner.endpoints.registry import add_endpoint
from planner.store.requests import (
    RTT_REQUEST_MAX_N,
    RequestKind,
    RequestStatus,
    RttRequestRow,
    abandon_rtt_request,
    claim_requests,
    claim_rtt_requests,
    create_request,
    create_rtt_request,
    fail_orphaned_requests,
    finish_rtt_request,
    get_request,
    get_rtt_request,
)
from planner.store.rtt import load_samples
from planner.store.worker import insert_cold_reading
from planner.worker.requests import ORPHAN_DETAIL
from planner.worker.team import TeamHooks
from tests.support.fake_clock import FakeClock
from tests.support.rtt_target import serve_in_thread
from tests.support.worker_driver import drive, housekeeping_passes, until

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def target():
    server = serve_in_thread()
    yield server
    server.stop()


def run_until(engine, until_db, what: str, **config) -> None:
    """Run an in-process worker (real clocks) until `until_db()` — it reads the database — holds, then stop it."""

    async def body(w):
        await until(until_db, what, in_thread=True)

    drive(engine, body, **config)


def finished(engine, request_id: int) -> bool:
    return get_rtt_request(engine, request_id)["status"] in (RequestStatus.DONE, RequestStatus.FAILED)


def test_a_request_is_claimed_once_measured_and_stored(engine, target):
    rid = create_rtt_request(
        engine, [("local-http", f"{target.base_url}/ping"), ("local-tcp", f"127.0.0.1:{target.port}")], 5
    )
    other = create_rtt_request(engine, [("elsewhere", f"127.0.0.1:{target.port}")], 3, vantage="berlin")
    run_until(engine, lambda: finished(engine, rid), "end of the request")
    req = get_rtt_request(engine, rid)
    assert req["status"] == "done" and req["detail"].startswith("stored ") and "failed" not in req["detail"]
    samples = load_samples(engine)
    connects = samples[samples["method"] == "tcp-connect"]
    # Five kept connects per target, each target's run once, all labelled with the worker's vantage.
    assert connects.groupby("region_id").size().to_dict() == {"local-http": 5, "local-tcp": 5}
    assert connects.groupby("region_id")["run_id"].nunique().to_dict() == {"local-http": 1, "local-tcp": 1}
    assert set(samples["vantage"]) == {""} and set(samples["side"]) == {"server"}
    assert connects["error_class"].isna().all() and (connects["rtt_ms"] > 0).all()
    assert "https-ttfb" in set(samples.loc[samples["region_id"] == "local-http", "method"])
    # Another vantage's request is left for its own worker.
    assert get_rtt_request(engine, other)["status"] == "pending"
    # A forged second claim of the finished request gets nothing, so nothing runs twice.
    assert claim_rtt_requests(engine, "", "forger:1:x", int(time.time() * 1000)) == []
    assert len(load_samples(engine)) == len(samples)


def test_a_failing_target_is_a_reason_in_the_detail_and_the_others_still_count(engine, target):
    rid = create_rtt_request(engine, [("ok", f"127.0.0.1:{target.port}"), ("refused", "127.0.0.1:9")], 3)
    run_until(engine, lambda: finished(engine, rid), "end of the request")
    req = get_rtt_request(engine, rid)
    assert req["status"] == "done" and "1 failed: refused (refused)" in req["detail"], req["detail"]
    samples = load_samples(engine)
    assert (samples.loc[samples["region_id"] == "ok", "method"] == "tcp-connect").sum() == 3
    assert samples.loc[samples["region_id"] == "refused", "error_class"].dropna().tolist() == ["refused"]


def test_a_row_with_an_unreadable_target_list_fails_with_the_reason(engine):
    with engine.begin() as c:
        c.execute(
            sa.insert(RttRequestRow.__table__).values(
                vantage="", targets_json="{not json", n=3, status="pending", requested_at_ms=1
            )
        )
        rid = c.execute(sa.text("SELECT max(id) FROM rtt_request")).scalar()
    run_until(engine, lambda: finished(engine, rid), "end of the request")
    req = get_rtt_request(engine, rid)
    assert req["status"] == "failed" and "not JSON" in req["detail"]
    assert load_samples(engine).empty


def test_claims_are_exclusive_and_a_withdrawn_request_cannot_be_claimed(engine):
    a = create_rtt_request(engine, [("x", "127.0.0.1:9")], 3)
    b = create_rtt_request(engine, [("y", "127.0.0.1:9")], 3)
    claimed = claim_rtt_requests(engine, "", "w1:1:a", 10)
    assert [r["id"] for r in claimed] == [a, b]  # oldest first
    assert claim_rtt_requests(engine, "", "w2:2:b", 11) == []  # a second worker of the vantage gets none of them
    assert abandon_rtt_request(engine, a, "no worker claimed it", 12) is False  # running: not withdrawn
    finish_rtt_request(engine, a, RequestStatus.DONE, "stored 0 samples", 13)
    c = create_rtt_request(engine, [("z", "127.0.0.1:9")], 3)
    assert abandon_rtt_request(engine, c, "no worker claimed it", 14) is True
    assert claim_rtt_requests(engine, "", "w1:1:a", 15) == []
    assert get_rtt_request(engine, c)["detail"] == "no worker claimed it"
    assert get_rtt_request(engine, b)["status"] == "running"


def test_a_request_left_running_by_a_killed_worker_is_failed_not_left_waiting(engine, target):
    """The Regions page polls a request until it ends: one claimed by a worker that died must end, with the reason."""
    dead = create_rtt_request(engine, [("x", f"127.0.0.1:{target.port}")], 3)
    assert claim_rtt_requests(engine, "", f"{socket.gethostname()}:999999999:dead", 10)  # the killed worker's claim
    fresh = create_rtt_request(engine, [("y", f"127.0.0.1:{target.port}")], 3)
    run_until(engine, lambda: finished(engine, dead) and finished(engine, fresh), "end of both requests")
    req = get_rtt_request(engine, dead)
    assert req["status"] == "failed" and req["detail"] == ORPHAN_DETAIL
    assert get_rtt_request(engine, fresh)["status"] == "done"  # the next request still runs


def test_only_requests_whose_claimer_holds_no_live_lease_are_orphans(engine):
    ep = add_endpoint(engine, {"name": "e", "base_url": "http://127.0.0.1:9/v1", "model": "m"})
    cold = create_request(engine, ep.id, RequestKind.COLD_READING, idle_s=0.0)
    now = create_request(engine, ep.id, RequestKind.PROBE_NOW)
    mine = create_rtt_request(engine, [("x", "127.0.0.1:9")], 3)
    assert len(claim_requests(engine, [ep.id], "", "gone:1:a", 10)) == 2
    assert claim_rtt_requests(engine, "", "alive:2:b", 10)
    reading = insert_cold_reading(engine, ep.id, "", get_request(engine, cold), 0.0, 20)
    waiting = create_rtt_request(engine, [("y", "127.0.0.1:9")], 3)
    assert fail_orphaned_requests(engine, {"alive:2:b"}, "gone", 30) == 2
    assert [get_request(engine, i)["status"] for i in (cold, now)] == ["failed", "failed"]
    assert get_request(engine, cold)["detail"] == "gone" and get_request(engine, cold)["done_at_ms"] == 30
    with engine.connect() as c:
        state = c.execute(sa.text("SELECT state, detail FROM cold_reading WHERE id = :i"), {"i": reading}).one()
    assert tuple(state) == ("failed", "gone")  # the cold reading it had started ends with it
    assert get_rtt_request(engine, mine)["status"] == "running"  # its worker is alive: left alone
    assert get_rtt_request(engine, waiting)["status"] == "pending"  # never claimed: not an orphan
    assert fail_orphaned_requests(engine, {"alive:2:b"}, "gone", 40) == 0


@pytest.mark.parametrize(
    "targets, n, message",
    [
        ([], 3, "at least one target"),
        ([("", "127.0.0.1:9")], 3, "needs an id"),
        ([("x", "h" * 501)], 3, "needs an id"),
        ([("x", "127.0.0.1:9")], 0, "samples per target"),
        ([("x", "127.0.0.1:9")], RTT_REQUEST_MAX_N + 1, "samples per target"),
    ],
)
def test_a_bad_request_is_refused_before_it_is_queued(sqlite_engine, targets, n, message):
    with pytest.raises(ValueError, match=message):
        create_rtt_request(sqlite_engine, targets, n)
    with sqlite_engine.connect() as c:
        assert c.execute(sa.text("SELECT count(*) FROM rtt_request")).scalar() == 0


# ------------------------------------------------------------------ the collaborators


def test_no_collaborator_imports_the_runner():
    offenders = []
    for path in sorted((ROOT / "planner/worker").glob("*.py")):
        if path.name in ("runner.py", "__init__.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            if "planner.worker.runner" in names:
                offenders.append(path.name)
    assert offenders == []


def test_an_idle_worker_runs_the_alert_pass_only_when_it_is_due(sqlite_engine, monkeypatch):
    clock = FakeClock()
    ticks: list[int] = []  # alert passes (each one a thread)
    real_tick = TeamHooks.tick

    def counting_tick(self, now_ms, *, holds_lease):
        ticks.append(now_ms)
        real_tick(self, now_ms, holds_lease=holds_lease)

    monkeypatch.setattr(TeamHooks, "tick", counting_tick)
    start = clock.ms

    async def body(w):
        await until(lambda: ticks, "first alert pass")  # due at once
        clock.advance(29_999)
        await housekeeping_passes(w)  # before: an alert thread at each pass, five a second
        idle = list(ticks)
        clock.advance(1)
        await until(lambda: len(ticks) == 2, "second alert pass")
        return idle

    idle = drive(sqlite_engine, body, clock=clock, alerts_every_s=30.0)
    assert idle == [start]  # none while the next pass was not due
    assert ticks == [start, start + 30_000]
