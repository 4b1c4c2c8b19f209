"""Issue 15 items 2–5, 7 and 9: the worker under bad rows, dying tasks, outages at stop, crashes, a paused
lease holder, a read-only database — each as it was attacked, on SQLite and PostgreSQL where it applies.

Every step waits for what the worker does (rows stored, a probe served, a log line, the lease row), never for a
time: the waits' limits are hang guards (tests.support.worker_proc.HANG_S), so a loaded machine only makes the tests
slower."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from planner.endpoints.registry import add_endpoint
from planner.simulator import SimulatorConfig, running_simulator
from planner.store import leases as lease
from planner.store import open_store
from planner.store.probes import ProbeSampleRow, insert_samples
from planner.store.rtt import add_target
from planner.store.worker_state import WorkerReport, worker_report, write_state
from planner.worker import spool
from planner.worker.runner import Worker, WorkerConfig
from tests.support.probe_rows import slot_row
from tests.support.sql_rows import sql_rows
from tests.support.store_template import migrated_sqlite
from tests.support.waiting import wait_for
from tests.support.worker_driver import drive, until
from tests.support.worker_proc import HANG_S, spawn_worker_on, wait_for_line, wait_logged
from tests.support.worker_states import write_disk_full_state

FAST = SimulatorConfig(prefill_tokens_per_s=200_000, decode_tokens_per_s=5000, seed=4)


@pytest.fixture(autouse=True)
def _short_intervals(monkeypatch):
    monkeypatch.setenv("TTFT_PLANNER_MIN_INTERVAL_S", "0.2")


@pytest.fixture(scope="module")
def sim_url():
    with running_simulator(FAST) as url:
        yield url


def n_rows(engine, where: str = "1 = 1", **params) -> int:
    return sql_rows(engine, f"SELECT count(*) AS n FROM probe_sample WHERE {where}", **params)[0]["n"]


def served(sim_url: str) -> int:
    """Requests the simulated endpoint has received: a probe the worker started, seen from the endpoint's side."""
    return httpx.get(sim_url.removesuffix("/v1") + "/health", timeout=30).json()["requests"]


def ep(engine, name, url, **kw):
    return add_endpoint(
        engine,
        {
            "name": name,
            "base_url": url,
            "model": "m",
            "interval_s": 0.3,
            "timeout_s": 0.25,
            "prompt_tokens": 20,
            "max_tokens": 4,
        }
        | kw,
    )


# ------------------------------------------------------------------ item 1/2: bad rows, dying tasks


def test_out_of_range_rows_from_an_older_version_are_reported_and_the_rest_keeps_running(engine, sim_url):
    good = ep(engine, "good", sim_url)
    huge = ep(engine, "huge-prompt", sim_url)
    inf = ep(engine, "inf-interval", sim_url)
    add_target(engine, "r-inf", "http://127.0.0.1:9", interval_s=60, enabled=True)
    with engine.begin() as c:  # what an older version (or a hand edit) could leave in the database
        c.execute(sa.text("UPDATE endpoint SET prompt_tokens = 2000000000 WHERE id = :i"), {"i": huge.id})
        c.execute(sa.text("UPDATE endpoint SET interval_s = :v WHERE id = :i"), {"v": float("inf"), "i": inf.id})
        c.execute(sa.text("UPDATE rtt_target SET interval_s = :v"), {"v": float("inf")})

    async def body(w: Worker) -> tuple[Worker, int]:
        await until(lambda: n_rows(engine, "endpoint_id = :e", e=good.id) >= 3, "good samples", in_thread=True)
        late = (await asyncio.to_thread(ep, engine, "added-later", sim_url)).id
        # housekeeping kept reloading: the endpoint added while it runs is picked up
        await until(lambda: n_rows(engine, "endpoint_id = :e", e=late) >= 2, "samples of the later one", in_thread=True)
        return w, late

    w, late = drive(engine, body, reload_interval_s=0.3)
    counts = {
        r["endpoint_id"]: r["n"]
        for r in sql_rows(engine, "SELECT endpoint_id, count(*) AS n FROM probe_sample GROUP BY endpoint_id")
    }
    assert counts[good.id] >= 3 and counts[late] >= 2
    assert huge.id not in counts and inf.id not in counts
    status = {r["endpoint_id"]: r for r in sql_rows(engine, "SELECT * FROM endpoint_status")}
    assert status[huge.id]["state"] == "error"
    assert "prompt_tokens must be a whole number from 1 to 2,000,000" in status[huge.id]["detail"]
    assert status[inf.id]["state"] == "error" and "interval_s" in status[inf.id]["detail"]
    assert w.task_failures == []  # nothing died: the bad rows were refused, not crashed on


def test_a_background_task_that_dies_is_logged_restarted_and_shown(engine, sim_url, monkeypatch, caplog):
    good = ep(engine, "good", sim_url)
    real_reload = Worker.reload
    calls = {"n": 0}

    async def flaky_reload(self, initial=False):
        calls["n"] += 1
        if calls["n"] == 3:
            raise OverflowError("cannot convert float infinity to integer")
        await real_reload(self, initial)

    def report():
        return worker_report(engine, "", lease.current(engine), int(time.time() * 1000))

    async def body(w: Worker) -> tuple[Worker, WorkerReport]:
        await until(lambda: calls["n"] > 3, "housekeeping restarted (reloading again after its failure)")
        # after the restart the page still says what died
        died = await until(
            lambda: (r := report()).running and "housekeeping task died" in r.text and r, "the report", in_thread=True
        )
        await until(lambda: n_rows(engine, "endpoint_id = :e", e=good.id), "the endpoint's samples", in_thread=True)
        return w, died

    monkeypatch.setattr(Worker, "reload", flaky_reload)
    w, shown = drive(engine, body, reload_interval_s=0.3)
    assert n_rows(engine, "endpoint_id = :e", e=good.id) > 0  # probing went on through the failure
    assert [f["task"] for f in w.task_failures] == ["housekeeping"]
    assert "OverflowError" in w.task_failures[0]["error"]
    assert "background task housekeeping died" in caplog.text
    assert calls["n"] > 3 and shown.running


# ------------------------------------------------------------------ item 3: stop during an outage, spool, crash labels


def _in_a_write(proc: subprocess.Popen, engine, app: str) -> bool:
    """True while the (stopped) `proc`, whose PostgreSQL sessions are named `app`, sits inside a write transaction,
    holding locks that nobody else can take."""
    if engine.dialect.name == "sqlite":  # the WAL write lock: a POSIX WRITE lock on the -shm file, in /proc/locks
        return any(
            f" WRITE {proc.pid} " in line and "POSIX" in line for line in Path("/proc/locks").read_text().splitlines()
        )
    sql = "SELECT state, backend_xid IS NOT NULL AS writes FROM pg_stat_activity WHERE application_name = :app"

    def settled() -> list[dict] | None:  # a stopped client's statement still runs to its end on the server
        rows = sql_rows(engine, sql, app=app)
        return None if any(r["state"] == "active" for r in rows) else rows

    sessions = wait_for(lambda: (s := settled()) is not None and [s], HANG_S, "the stopped worker's last statement")[0]
    return any(r["state"] == "idle in transaction" and r["writes"] for r in sessions)


def _stopped_between_writes(proc: subprocess.Popen, engine, app: str) -> bool:
    """SIGSTOP `proc`; if it was inside a write transaction, SIGCONT it again and say False (try again).

    A process stopped inside a write keeps its locks while stopped: on SQLite the write lock blocks every other
    writer, on PostgreSQL its row lock blocks whoever updates the lease row, so no standby could take over however
    long it waited. That is the database's rule, not the worker's; this test is about the lease.
    """
    proc.send_signal(signal.SIGSTOP)
    if not _in_a_write(proc, engine, app):
        return True
    proc.send_signal(signal.SIGCONT)
    return False


def test_sigterm_while_sqlite_is_locked_spools_the_buffer_and_the_next_start_stores_it(
    sqlite_store_url, sim_url, tmp_path
):
    engine = open_store(sqlite_store_url)
    e = ep(engine, "sim", sim_url)
    log = tmp_path / "a.log"
    w = spawn_worker_on(sqlite_store_url, log, "--probe-processes", "0", "--lease-ttl-s", "5")
    lock = sqlite3.connect(sqlite_store_url.removeprefix("sqlite:///"), timeout=HANG_S)
    try:
        wait_logged(lambda: n_rows(engine) >= 5, "first samples", log)
        lock.execute("BEGIN EXCLUSIVE")  # the outage: every write waits, then fails "database is locked"
        stored_before = n_rows(engine)
        probes = served(sim_url)
        # three probes started after the lock: their rows can only be spooled
        wait_logged(lambda: served(sim_url) >= probes + 3, "three probes during the outage", log)
        w.send_signal(signal.SIGTERM)
        rc = w.wait(HANG_S)
    finally:
        if w.poll() is None:
            w.kill()
        lock.rollback()
        lock.close()
    text = log.read_text()
    assert rc == 0, text[-3000:]
    assert "Traceback" not in text
    m = re.search(r"spooled (\d+) unsaved probe rows to (\S+);", text)
    assert m, text[-3000:]
    spooled = int(m.group(1))
    assert spooled >= 3 and Path(m.group(2)).exists()
    # The next start replays the spool (idempotently) before probing.
    assert spool.replay(engine) == spooled
    assert spool.replay(engine) == 0 and not list(spool.spool_dir(engine).glob("*.jsonl"))
    stored = sql_rows(engine, "SELECT kind, scheduled_at_ms FROM probe_sample WHERE endpoint_id = :e", e=e.id)
    assert len(stored) == stored_before + spooled
    assert len({(r["kind"], r["scheduled_at_ms"]) for r in stored}) == len(stored)
    engine.dispose()


def test_spool_replay_is_idempotent_and_drops_rows_of_removed_endpoints(engine, sim_url):
    a, b = ep(engine, "a", sim_url), ep(engine, "b", sim_url)
    rows = [slot_row(x.id, 1000 * i, 50.0) for x in (a, b) for i in range(1, 4)]
    insert_samples(engine, rows[:2])  # some reached the database before the outage
    spool.write(engine, rows)
    with engine.begin() as c:
        c.execute(sa.text("DELETE FROM endpoint WHERE id = :i"), {"i": b.id})
    assert spool.replay(engine) == 1  # a's third row; a's first two were already stored; b is gone
    assert len(sql_rows(engine, "SELECT id FROM probe_sample")) == 3


# ------------------------------------------------------------------ items 4 and 5: leases


def test_a_restarted_worker_takes_its_own_dead_lease_at_once(engine):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    now = int(time.time() * 1000)
    assert lease.acquire(engine, "v", f"{socket.gethostname()}:{dead.pid}:old", now, ttl_s=60)
    assert lease.acquire(engine, "v", "me", now + 10, ttl_s=60)  # not 60 s later: its pid is gone
    alive = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        assert lease.acquire(engine, "w", f"{socket.gethostname()}:{alive.pid}:x", now, ttl_s=60)
        assert not lease.acquire(engine, "w", "me", now + 10, ttl_s=60)  # a live holder keeps it
        assert lease.acquire(engine, "z", f"elsewhere.example:{dead.pid}:x", now, ttl_s=60)
        assert not lease.acquire(engine, "z", "me", now + 10, ttl_s=60)  # another host's pid says nothing
    finally:
        alive.kill()
        alive.wait()


def test_a_slot_has_exactly_one_outcome(engine, sim_url):
    e = ep(engine, "a", sim_url)

    def row(kind, slot):
        return ProbeSampleRow(
            endpoint_id=e.id,
            vantage="",
            kind=kind,
            scheduled_at_ms=slot,
            started_at_ms=slot,
            ok=kind == "scheduled",
            error_class=None if kind == "scheduled" else "skipped",
        )

    insert_samples(engine, [row("skipped", 1000), row("skipped", 2000)])  # the paused worker's view
    insert_samples(engine, [row("scheduled", 1000), row("skipped", 3000), row("scheduled", 3000)])  # the other's
    insert_samples(engine, [row("skipped", 1000)])  # the paused one, late
    got = [
        (r["kind"], r["scheduled_at_ms"])
        for r in sql_rows(engine, "SELECT kind, scheduled_at_ms FROM probe_sample ORDER BY 2")
    ]
    assert got == [("scheduled", 1000), ("skipped", 2000), ("scheduled", 3000)]


def test_a_woken_holder_rechecks_its_lease_and_drops_its_skips_for_the_new_holders_slots(engine, sim_url):
    e = ep(engine, "a", sim_url)
    w = Worker(engine, WorkerConfig(lease_ttl_s=3, probe_processes=0))

    async def main():
        assert lease.acquire(engine, "", w.config.holder, w.clock.now_ms(), 3)
        w.holds_lease = True
        w.lease.checked_ms = w.clock.now_ms() - 10_000  # last confirmed 10 s ago:
        w.lease.woke_from_pause = True  # the loop saw it sat still that long (SIGSTOP), as the schedule loop detects
        with engine.begin() as c:  # meanwhile the lease expired and another worker took it
            c.execute(
                sa.text("UPDATE worker_lease SET holder = 'other:1:x', expires_at_ms = :t"),
                {"t": w.clock.now_ms() + 60_000},
            )
        slot = w.clock.now_ms() - 1000
        w.buffer.rows = [
            ProbeSampleRow(
                endpoint_id=e.id,
                vantage="",
                kind="skipped",
                scheduled_at_ms=slot,
                started_at_ms=slot,
                ok=False,
                error_class="skipped",
                error_detail="late",
            ),
            slot_row(e.id, slot - 300, 40.0),
        ]
        await w.flush()

    asyncio.run(main())
    assert not w.holds_lease
    assert [r["kind"] for r in sql_rows(engine, "SELECT kind FROM probe_sample")] == ["scheduled"]


# ------------------------------------------------------------------ item 7: read-only database


def _worker_failing_read_only(database_url: str) -> subprocess.CompletedProcess[str]:
    """Run `ttft-planner worker` on the read-only store at `database_url`; check it exits 1 with one error line
    naming the read-only database, and return the finished process."""
    env = {**os.environ, "TTFT_PLANNER_DATABASE_URL": database_url}
    proc = subprocess.run(
        [sys.executable, "-c", "from planner.cli import main; main()", "worker", "--probe-processes", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_S,  # a hang guard: "fails fast" means it exits with its message instead of retrying for ever
    )
    assert proc.returncode == 1, proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "read-only" in errors[0], proc.stderr[-2000:]
    return proc


def test_a_read_only_database_fails_fast_with_one_message(tmp_path, sim_url):
    path = tmp_path / "ro.db"
    eng = open_store(migrated_sqlite(path))
    ep(eng, "a", sim_url)
    eng.dispose()
    url = f"sqlite:///file:{path}?mode=ro&uri=true"
    proc = _worker_failing_read_only(url)
    assert "Traceback" not in proc.stderr and "warning" not in proc.stderr.lower()
    assert not Path("file:").exists()  # the URI form names a file; no "file:/…" folder appears in the working dir


# ------------------------------------------------------------------ item 9: the worker's real state


def test_the_report_says_buffering_n_rows_since_t_and_why(sqlite_engine):
    now = int(time.time() * 1000)
    write_disk_full_state(sqlite_engine, now_ms=now, holds_lease=False, unsaved_rows=17, unsaved_since_ms=now - 60_000)
    r = worker_report(sqlite_engine, "", [], now, fmt_ms=lambda ms: f"<{ms}>")
    assert r.running and r.level == "warning"
    assert f"buffering 17 rows since <{now - 60_000}>" in r.text and "disk is full" in r.text
    # A state file whose process is gone is not a running worker.
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    write_state(
        sqlite_engine,
        "",
        {
            "host": socket.gethostname(),
            "pid": dead.pid,
            "updated_at_ms": now,
            "unsaved_rows": 17,
            "unsaved_since_ms": now,
        },
    )
    r = worker_report(sqlite_engine, "", [], now)
    assert not r.running and "No worker is probing" in r.text


def _postgres_pids(pg_server) -> list[int]:
    """The postmaster and every backend of the test cluster."""
    master = int((pg_server._dir / "data" / "postmaster.pid").read_text().split()[0])
    pids = [master]
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == master:
                pids.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return pids


@pytest.mark.postgres
def test_sigterm_while_postgresql_is_frozen_exits_in_bounded_time_and_spools(
    pg_server, pg_store_url, sim_url, tmp_path, monkeypatch
):
    if pg_server._dir is None:
        pytest.skip("an external PostgreSQL (TTFT_PLANNER_TEST_PG_URL) cannot be frozen here")
    monkeypatch.setenv("TTFT_PLANNER_DATA_DIR", str(tmp_path / "data"))  # the PostgreSQL spool lives under it
    engine = open_store(pg_store_url)
    e = ep(engine, "sim", sim_url)
    log = tmp_path / "a.log"
    w = spawn_worker_on(pg_store_url, log, "--probe-processes", "0", "--lease-ttl-s", "30")
    frozen: list[int] = []
    try:
        wait_logged(lambda: n_rows(engine) >= 5, "first samples", log)
        frozen = _postgres_pids(pg_server)
        for pid in frozen:
            os.kill(pid, signal.SIGSTOP)  # the database hangs: no error, no answer
        probes = served(sim_url)
        # a probe started after the freeze: its row can only be spooled
        wait_logged(lambda: served(sim_url) > probes, "a probe while the database is frozen", log)
        w.send_signal(signal.SIGTERM)
        try:
            # A hang guard: the stop waits 5 s for the database and then spools; a stop that waited for the
            # database would still be waiting (it never answers) and fail here.
            rc = w.wait(HANG_S)
        except subprocess.TimeoutExpired:
            rc = None
    finally:
        for pid in frozen:
            os.kill(pid, signal.SIGCONT)
        if w.poll() is None:
            w.kill()
    text = log.read_text()
    assert rc == 0, text[-3000:]
    assert re.search(r"the database did not answer within [\d.]+ s at stop", text), text[-3000:]  # it gave up waiting
    m = re.search(r"spooled (\d+) unsaved probe rows", text)
    assert m and int(m.group(1)) >= 1, text[-3000:]
    before = n_rows(engine, "endpoint_id = :e", e=e.id)
    assert spool.replay(engine) >= 1  # at least the probe's after the freeze (a commit cut by the freeze may be in)
    after = sql_rows(engine, "SELECT kind, scheduled_at_ms FROM probe_sample WHERE endpoint_id = :e", e=e.id)
    assert len(after) > before and len({(r["kind"], r["scheduled_at_ms"]) for r in after}) == len(after)
    engine.dispose()


@pytest.mark.postgres
def test_a_read_only_postgresql_database_fails_fast_with_one_message(pg_store_url, sim_url):
    eng = open_store(pg_store_url)
    ep(eng, "a", sim_url)
    dbname = pg_store_url.rsplit("/", 1)[1]
    with eng.connect() as c:
        c.execute(sa.text(f'ALTER DATABASE "{dbname}" SET default_transaction_read_only = on'))
        c.commit()
    eng.dispose()
    proc = _worker_failing_read_only(pg_store_url)
    assert "Traceback" not in proc.stderr


def test_a_holder_paused_past_its_lease_resumes_without_double_outcomes(store_url, engine, sim_url, tmp_path):
    """SIGSTOP the lease holder until a standby takes over and stores slots, then SIGCONT it: no slot ends with two
    outcomes."""
    ep(engine, "sim", sim_url)
    names = ("one", "two")
    logs = [tmp_path / f"{name}.log" for name in names]
    args = ("-v", "--probe-processes", "0", "--lease-ttl-s", "2")  # -v: the standby logs that it stands by
    # Both start at once: whichever takes the lease is paused, the other stands by. PGAPPNAME names their PostgreSQL
    # sessions, so the test can see whether the paused one sits inside a write.
    procs = [spawn_worker_on(store_url, tmp_path / f"{n}.log", *args, env={"PGAPPNAME": f"w-{n}"}) for n in names]
    slots = "kind IN ('scheduled', 'skipped')"
    try:
        wait_logged(lambda: n_rows(engine) >= 3, "first samples", *logs)
        [holder] = [r["holder"] for r in lease.current(engine)]
        h = [p.pid for p in procs].index(int(holder.split(":")[1]))
        (a, a_log, a_app), (b, b_log) = (procs[h], logs[h], f"w-{names[h]}"), (procs[1 - h], logs[1 - h])
        wait_for_line(b_log, "is held by another worker: standing by")
        wait_logged(lambda: _stopped_between_writes(a, engine, a_app), "a stop between writes", *logs)
        # a laptop lid: no renewals until b takes the lease over ...
        wait_logged(
            lambda: any(r["holder"].split(":")[1] == str(b.pid) for r in lease.current(engine)), "takeover", *logs
        )
        taken = n_rows(engine, slots)
        # ... and stores slots of its own, which a (its schedule frozen) also believes are its to probe or skip
        wait_logged(lambda: n_rows(engine, slots) >= taken + 3, "the new holder's slots", *logs)
        a.send_signal(signal.SIGCONT)  # a wakes up holding a lease that is no longer its own
        wait_for_line(a_log, "lost the lease")
        for p in procs:
            p.send_signal(signal.SIGTERM)
        assert [p.wait(HANG_S) for p in procs] == [0, 0]
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.kill()
    rows = sql_rows(engine, f"SELECT kind, scheduled_at_ms FROM probe_sample WHERE {slots}")
    slot_ms = [r["scheduled_at_ms"] for r in rows]
    assert len(slot_ms) == len(set(slot_ms)), "a slot with two outcomes (probed and skipped, or probed twice)"


def test_slots_a_killed_worker_never_stored_are_labelled_lost_in_a_crash():
    from planner.endpoints.samples import SkipCause
    from planner.worker.scheduler import Scheduler

    s = Scheduler()
    s.add("endpoint:1", 1000, 20_000, last_slot_ms=2_000, crashed_until_ms=9_000)
    skips = [a for a in s.due(20_000) if a.action == "skip"]
    assert len(skips) >= 15
    for a in skips:
        crashed = a.slot_ms <= 9_000
        assert (a.cause is SkipCause.CRASHED) == crashed and a.reason == a.cause.text, (a.slot_ms, a.reason)
    assert {a.cause for a in skips} == {SkipCause.CRASHED, SkipCause.NOT_RUNNING}
