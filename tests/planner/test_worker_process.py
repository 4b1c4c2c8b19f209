"""The worker as a real process against the simulated endpoint, on SQLite and on PostgreSQL:
kill -9 and restart, SIGTERM, and the lease between two workers of one vantage."""

from __future__ import annotations

import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from planner.endpoints import add_endpoint
from planner.probes.errors import ErrorClass
from planner.simulator import SimulatorConfig, running_simulator
from planner.store import open_store
from planner.worker.scheduler import SkipCause
from tests.support.skips import overload_skip
from tests.support.waiting import wait_for
from tests.support.worker_proc import spawn_worker_on

INTERVAL_S = 0.3
TIMEOUTS = {ErrorClass.READ_TIMEOUT.value, ErrorClass.CONNECT_TIMEOUT.value}


@pytest.fixture(scope="module")
def sim_url():
    with running_simulator(SimulatorConfig(prefill_tokens_per_s=200_000, decode_tokens_per_s=5000, seed=1)) as url:
        yield url


def rows(engine, *where: str) -> list[dict]:
    q = "SELECT * FROM probe_sample" + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY scheduled_at_ms"
    with engine.connect() as c:
        return [dict(r) for r in c.execute(sa.text(q)).mappings()]


def count(engine, where: str = "kind = 'scheduled'") -> int:
    with engine.connect() as c:
        return c.execute(sa.text(f"SELECT COUNT(*) FROM probe_sample WHERE {where}")).scalar()


@pytest.fixture
def setup(db_url, sim_url, tmp_path, monkeypatch):
    monkeypatch.setenv("TTFT_PLANNER_MIN_INTERVAL_S", "0.2")
    engine = open_store(db_url)
    ep = add_endpoint(
        engine,
        {
            "name": "sim",
            "base_url": sim_url,
            "model": "m",
            "interval_s": INTERVAL_S,
            "timeout_s": 0.25,
            "prompt_tokens": 50,
            "max_tokens": 4,
        },
    )
    procs: list[subprocess.Popen] = []
    yield engine, ep, procs, tmp_path
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait(5)
    engine.dispose()


def test_kill_9_then_restart_keeps_every_slot_exactly_once(setup, db_url):
    engine, ep, procs, tmp = setup
    a = spawn_worker_on(db_url, tmp / "a.log", "--lease-ttl-s", "2")
    procs.append(a)
    wait_for(lambda: count(engine) >= 10, what="first samples")
    a.send_signal(signal.SIGKILL)
    a.wait(5)
    before = {r["id"]: r for r in rows(engine)}
    if engine.dialect.name == "sqlite":
        with engine.connect() as c:
            assert c.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
    time.sleep(1.0)  # the endpoint goes unprobed for a while: those slots must show up as skipped

    b = spawn_worker_on(db_url, tmp / "b.log", "--lease-ttl-s", "2")
    procs.append(b)
    n0 = count(engine)
    wait_for(lambda: count(engine) >= n0 + 10, what="samples after the restart")
    b.send_signal(signal.SIGTERM)
    assert b.wait(15) == 0
    stopped = re.search(r"worker stopped: .*", (tmp / "b.log").read_text())
    assert stopped, (tmp / "b.log").read_text()[-2000:]
    # The stop line counts the skipped slots by cause: here the dead worker's (crashed) and the gap (not_running).
    assert re.search(r"skipped slots \(.*\b(crashed|not_running) \d+", stopped.group(0)), stopped.group(0)
    assert "background task" not in (tmp / "b.log").read_text()  # taking the dead worker's lease crashed nothing

    after = rows(engine)
    # Nothing stored before the crash was lost or changed.
    by_id = {r["id"]: r for r in after}
    assert all(by_id.get(i) == r for i, r in before.items())
    # Every slot from the first to the last is there exactly once: probed, or recorded as skipped.
    slots = [r["scheduled_at_ms"] for r in after if r["kind"] in ("scheduled", "skipped")]
    assert len(slots) == len(set(slots))
    steps = {b - a for a, b in zip(slots, slots[1:], strict=False)}
    assert steps == {int(INTERVAL_S * 1000)}
    # The killed worker's last slots are labelled honestly ("lost in a crash"), the rest "not running" — in that order.
    # (A loaded machine may also skip a slot of a running worker, labelled so: those are set apart.)
    down = [r for r in after if r["kind"] == "skipped" and not overload_skip(r)]
    labels = [r["error_detail"] for r in down]
    assert len(down) >= 3, labels
    assert all(t.startswith((SkipCause.CRASHED.value, SkipCause.NOT_RUNNING.value)) for t in labels), labels
    crashed = [t.startswith(SkipCause.CRASHED.value) for t in labels]
    assert crashed == sorted(crashed, reverse=True), labels
    # Each probed slot measured a TTFT, or (a loaded machine stalling the 0.25 s probe) failed as a timeout, labelled.
    probed = [r for r in after if r["kind"] == "scheduled"]
    assert all((r["ok"] and r["ttft_ms"] > 0) or r["error_class"] in TIMEOUTS for r in probed), probed
    assert sum(r["ok"] for r in probed) >= 15, probed  # ten before the kill and ten after, nearly all measured
    # The clean stop released the lease at once.
    with engine.connect() as c:
        assert c.execute(sa.text("SELECT expires_at_ms FROM worker_lease")).scalar() == 0


def _stopped_probes(log: Path) -> int:
    m = re.search(r"worker stopped: (\d+) probes", log.read_text())
    assert m, log.read_text()[-2000:]
    return int(m.group(1))


def test_two_workers_of_one_vantage_share_a_lease_and_another_vantage_runs_beside(setup, db_url):
    engine, ep, procs, tmp = setup
    a = spawn_worker_on(db_url, tmp / "a.log", "--vantage", "office", "--lease-ttl-s", "2")
    procs.append(a)
    wait_for(lambda: count(engine, "vantage = 'office'") >= 3, what="office samples")
    b = spawn_worker_on(db_url, tmp / "b.log", "--vantage", "office", "--lease-ttl-s", "2")
    c = spawn_worker_on(db_url, tmp / "c.log", "--vantage", "cloud", "--lease-ttl-s", "2")
    procs += [b, c]
    wait_for(lambda: count(engine, "vantage = 'cloud'") >= 5, what="the second vantage's samples")
    time.sleep(1.0)
    with engine.connect() as conn:
        holders = dict(conn.execute(sa.text("SELECT vantage, holder FROM worker_lease")).all())
    assert set(holders) == {"office", "cloud"}
    assert holders["office"].split(":")[1] == str(a.pid)  # b is standing by

    a.send_signal(signal.SIGKILL)  # the holder dies: its lease expires and b takes over
    a.wait(5)
    killed_at_ms = int(time.time() * 1000)
    wait_for(
        lambda: count(engine, f"vantage = 'office' AND started_at_ms > {killed_at_ms + 2500}") >= 5,
        timeout_s=30,
        what="the standby taking over",
    )
    for p in (b, c):
        p.send_signal(signal.SIGTERM)
    assert b.wait(15) == 0 and c.wait(15) == 0
    # b never probed while a held the lease: everything it sent came after the takeover.
    b_probes = _stopped_probes(tmp / "b.log")
    after_takeover = count(engine, f"vantage = 'office' AND kind = 'scheduled' AND started_at_ms > {killed_at_ms}")
    assert 0 < b_probes <= after_takeover + 1
    office = [r["scheduled_at_ms"] for r in rows(engine, "vantage = 'office'", "kind IN ('scheduled', 'skipped')")]
    assert len(office) == len(set(office))
    assert {b - a for a, b in zip(office, office[1:], strict=False)} == {int(INTERVAL_S * 1000)}
    assert count(engine, "vantage = 'cloud' AND kind = 'scheduled' AND ok") >= 5
