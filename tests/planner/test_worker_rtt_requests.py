"""RTT requests (issue 16): the Regions page queues "measure these targets from vantage V", the worker of V claims
each exactly once, measures real local TCP/HTTP targets and stores the samples — on SQLite and PostgreSQL. Also the
worker's collaborators: none imports the runner, and an idle worker starts no alert thread five times a second."""

from __future__ import annotations

import ast
import asyncio
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from planner.store.rtt import load_samples
from planner.store.worker import (
    RTT_REQUEST_MAX_N,
    RequestStatus,
    RttRequestRow,
    abandon_rtt_request,
    claim_rtt_requests,
    create_rtt_request,
    finish_rtt_request,
    get_rtt_request,
)
from planner.worker.runner import Worker, WorkerConfig
from planner.worker.team import TeamHooks
from tests.support.rtt_target import serve_in_thread

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def target():
    server = serve_in_thread()
    yield server
    server.stop()


def run_until(engine, until, timeout_s: float = 20.0, **cfg) -> Worker:
    """Run an in-process worker until `until()` is true (checked every 0.1 s) or timeout_s, then stop it."""
    w = Worker(engine, WorkerConfig(lease_ttl_s=5, request_poll_s=0.2, **({"probe_processes": 0} | cfg)))

    async def main():
        task = asyncio.create_task(w.run())
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and not await asyncio.to_thread(until):
            await asyncio.sleep(0.1)
        w.request_stop()
        await task

    asyncio.run(main())
    return w


def finished(engine, request_id: int) -> bool:
    return get_rtt_request(engine, request_id)["status"] in (RequestStatus.DONE, RequestStatus.FAILED)


def test_a_request_is_claimed_once_measured_and_stored(engine, target):
    rid = create_rtt_request(
        engine, [("local-http", f"{target.base_url}/ping"), ("local-tcp", f"127.0.0.1:{target.port}")], 5
    )
    other = create_rtt_request(engine, [("elsewhere", f"127.0.0.1:{target.port}")], 3, vantage="berlin")
    run_until(engine, lambda: finished(engine, rid))
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
    run_until(engine, lambda: finished(engine, rid))
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
    run_until(engine, lambda: finished(engine, rid))
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
    ticks: list[int] = []
    real_tick = TeamHooks.tick

    def counting_tick(self, now_ms, *, holds_lease):
        ticks.append(now_ms)
        real_tick(self, now_ms, holds_lease=holds_lease)

    monkeypatch.setattr(TeamHooks, "tick", counting_tick)
    started = time.monotonic()
    run_until(sqlite_engine, lambda: time.monotonic() - started > 2.5, alerts_every_s=30.0)
    assert len(ticks) == 1  # the first pass is due at once; the next one in 30 s (before: a call every 0.2 s)
