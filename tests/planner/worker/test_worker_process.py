"""The worker as a real process against the simulated endpoint, on SQLite and on PostgreSQL:
kill -9 and restart, SIGTERM, and the lease between two workers of one vantage.

Each step waits for what the workers store or log (tests.support.worker_proc), never for a time, and the checks are on
what was stored, so a loaded machine makes the tests slower, not red."""

from __future__ import annotations

import re
import signal
import subprocess
from pathlib import Path

import pytest
import sqlalchemy as sa

from planner.endpoints.registry import add_endpoint
from planner.endpoints.samples import SkipCause
from planner.probes.errors import ErrorClass
from planner.simulator import SimulatorConfig, running_simulator
from planner.store import open_store
from tests.support.skips import overload_skip
from tests.support.worker_proc import HANG_S, spawn_worker_on, wait_for_line, wait_logged

INTERVAL_S = 0.3
INTERVAL_MS = int(INTERVAL_S * 1000)
MEASURED = "kind = 'scheduled' AND ok"  # a probed slot that measured a TTFT
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
def setup(store_url, sim_url, tmp_path, monkeypatch):
    monkeypatch.setenv("TTFT_PLANNER_MIN_INTERVAL_S", "0.2")
    engine = open_store(store_url)
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
            p.wait(HANG_S)
    engine.dispose()


def test_kill_9_then_restart_keeps_every_slot_exactly_once(setup, store_url):
    engine, ep, procs, tmp = setup
    a = spawn_worker_on(store_url, tmp / "a.log", "--lease-ttl-s", "2")
    procs.append(a)
    wait_logged(lambda: count(engine, MEASURED) >= 10, "ten measured samples", tmp / "a.log")
    a.send_signal(signal.SIGKILL)
    a.wait(HANG_S)
    before = {r["id"]: r for r in rows(engine)}
    if engine.dialect.name == "sqlite":
        with engine.connect() as c:
            assert c.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
    # The endpoint goes unprobed for a while: b cannot probe before the dead worker's lease runs out, so every slot
    # until then comes due unprobed (the first ones a may have probed without storing: lost in the crash). They must
    # show up as skipped. The stored lease says how many: its expiry is at least four slots past the last stored one
    # (a renews every third of its 2 s lease), so nothing here needs to wait for the clock.
    last_ms = max(r["scheduled_at_ms"] for r in before.values())
    with engine.connect() as c:
        expires_ms = c.execute(sa.text("SELECT max(expires_at_ms) FROM worker_lease")).scalar()
    assert expires_ms >= last_ms + 4 * INTERVAL_MS, (expires_ms, last_ms)

    b = spawn_worker_on(store_url, tmp / "b.log", "--lease-ttl-s", "2")
    procs.append(b)
    n0 = count(engine, MEASURED)
    wait_logged(lambda: count(engine, MEASURED) >= n0 + 10, "ten measured samples after the restart", tmp / "b.log")
    b.send_signal(signal.SIGTERM)
    assert b.wait(HANG_S) == 0
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
    assert _gaps(after) == [], "a slot with no outcome"
    # The killed worker's last slots are labelled honestly ("lost in a crash"), the rest "not running" — in that order.
    # (A loaded machine may also skip a slot of a running worker, labelled so: those are set apart.)
    down = [r for r in after if r["kind"] == "skipped" and not overload_skip(r)]
    labels = [(r["skip_cause"], r["error_detail"]) for r in down]
    assert len(down) >= 3, labels  # the four unprobed slots (the newest may be probed late instead)
    causes = (SkipCause.CRASHED, SkipCause.NOT_RUNNING)
    assert all(c in causes and t.startswith(SkipCause(c).text) for c, t in labels), labels
    crashed = [c == SkipCause.CRASHED for c, _ in labels]
    assert crashed == sorted(crashed, reverse=True), labels
    # Each probed slot measured a TTFT, or (a loaded machine stalling the 0.25 s probe) failed as a timeout, labelled.
    probed = [r for r in after if r["kind"] == "scheduled"]
    assert all((r["ok"] and r["ttft_ms"] > 0) or r["error_class"] in TIMEOUTS for r in probed), probed
    assert sum(r["ok"] for r in probed) >= 20, probed  # ten measured before the kill and ten after, none lost
    # The clean stop released the lease at once.
    with engine.connect() as c:
        assert c.execute(sa.text("SELECT expires_at_ms FROM worker_lease")).scalar() == 0


def _gaps(stored: list[dict]) -> list[tuple[dict, dict]]:
    """Neighbouring slot rows (probed or skipped, in slot order) further apart than one interval: a slot between them
    has no outcome at all. Each row is cut to what tells how it came about."""
    keep = ("kind", "scheduled_at_ms", "started_at_ms", "ok", "error_class", "error_detail")
    slots = [{k: r[k] for k in keep} for r in stored if r["kind"] in ("scheduled", "skipped")]
    return [
        (x, y)
        for x, y in zip(slots, slots[1:], strict=False)
        if y["scheduled_at_ms"] - x["scheduled_at_ms"] != INTERVAL_MS
    ]


def _stopped_probes(log: Path) -> int:
    m = re.search(r"worker stopped: (\d+) probes", log.read_text())
    assert m, log.read_text()[-2000:]
    return int(m.group(1))


def _held_by(engine, vantage: str, proc: subprocess.Popen) -> dict | None:
    """The lease row of `vantage` once `proc` holds it (else None)."""
    with engine.connect() as c:
        row = c.execute(sa.text("SELECT * FROM worker_lease WHERE vantage = :v"), {"v": vantage}).mappings().first()
    return dict(row) if row and row["holder"].split(":")[1] == str(proc.pid) else None


def test_two_workers_of_one_vantage_share_a_lease_and_another_vantage_runs_beside(setup, store_url):
    engine, ep, procs, tmp = setup
    # Two office workers and a cloud one start at once; whichever office worker takes the lease is `a`, the other
    # (`b`, -v: it logs that it stands by) must wait for it.
    logs = [tmp / f"{name}.log" for name in ("office-1", "office-2", "cloud")]
    office = [spawn_worker_on(store_url, log, "-v", "--vantage", "office", "--lease-ttl-s", "2") for log in logs[:2]]
    c = spawn_worker_on(store_url, logs[2], "--vantage", "cloud", "--lease-ttl-s", "2")
    procs += [*office, c]
    wait_logged(lambda: count(engine, "vantage = 'office'") >= 3, "office samples", *logs)
    wait_logged(lambda: count(engine, f"vantage = 'cloud' AND {MEASURED}") >= 5, "cloud samples", *logs)
    with engine.connect() as conn:
        holders = dict(conn.execute(sa.text("SELECT vantage, holder FROM worker_lease")).all())
    assert set(holders) == {"office", "cloud"}
    assert holders["cloud"].split(":")[1] == str(c.pid)
    h = [p.pid for p in office].index(int(holders["office"].split(":")[1]))
    a, b, b_log = office[h], office[1 - h], logs[1 - h]
    wait_for_line(b_log, "vantage 'office' is held by another worker: standing by")

    a.send_signal(signal.SIGKILL)  # the holder dies: b sees its pid gone and takes the lease over
    a.wait(HANG_S)
    lease = wait_logged(lambda: _held_by(engine, "office", b), "the standby taking over", *logs)
    after_takeover = f"vantage = 'office' AND kind = 'scheduled' AND started_at_ms >= {lease['acquired_at_ms']}"
    wait_logged(lambda: count(engine, after_takeover) >= 5, "the new holder's samples", *logs)
    for p in (b, c):
        p.send_signal(signal.SIGTERM)
    assert b.wait(HANG_S) == 0 and c.wait(HANG_S) == 0
    # b never probed while a held the lease: everything it sent came after the takeover.
    b_probes = _stopped_probes(b_log)
    assert 0 < b_probes <= count(engine, after_takeover) + 1
    office = rows(engine, "vantage = 'office'", "kind IN ('scheduled', 'skipped')")
    slots = [r["scheduled_at_ms"] for r in office]
    assert len(slots) == len(set(slots))
    assert _gaps(office) == [], "a slot with no outcome"
    assert count(engine, f"vantage = 'cloud' AND {MEASURED}") >= 5
