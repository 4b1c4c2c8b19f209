"""`ttft-planner serve`: dashboard, worker and simulated endpoint start together and stop together.

The tests wait for what `serve` does (the dashboard answers, the worker takes its lease, the process exits); the
waits' limits are hang guards (HANG_S), never speed checks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request

import sqlalchemy as sa

from planner.store import open_store
from tests.support.rtt_target import free_port
from tests.support.worker_proc import HANG_S, wait_logged


def _healthy(port: int) -> bool:
    try:
        return urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=10).read() == b"ok"
    except OSError:
        return False


def _children(pid: int, *, dashboard_only: bool = True) -> list[int]:
    """Child processes of `pid`: the dashboard (streamlit) only, unless dashboard_only=False (then the worker's
    probe processes too)."""
    with open(f"/proc/{pid}/task/{pid}/children") as fh:
        kids = [int(x) for x in fh.read().split()]
    if not dashboard_only:
        return kids
    out = []
    for kid in kids:
        try:
            cmd = open(f"/proc/{kid}/cmdline", "rb").read()
        except OSError:
            continue
        if b"streamlit" in cmd:
            out.append(kid)
    return out


def _serve(tmp_path, *args: str):
    """`ttft-planner serve --port <free> *args` on a data dir in tmp_path, once its dashboard answers."""
    port = free_port()
    env = {**os.environ, "TTFT_PLANNER_DATA_DIR": str(tmp_path)}
    env.pop("TTFT_PLANNER_DATABASE_URL", None)
    env.pop("TTFT_PLANNER_PUBLIC_URL", None)
    with open(tmp_path / "serve.log", "w") as log:  # the child keeps its own copy of the descriptor
        proc = subprocess.Popen(
            [sys.executable, "-c", "from planner.cli import main; main()", "serve", "--port", str(port), *args],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    wait_logged(lambda: proc.poll() is not None or _healthy(port), "the dashboard", tmp_path / "serve.log")
    assert proc.poll() is None, (tmp_path / "serve.log").read_text()[-2000:]
    return proc, port


def _lease_live(engine) -> bool:
    with engine.connect() as c:
        row = c.execute(sa.text("SELECT expires_at_ms FROM worker_lease WHERE vantage = ''")).first()
    return bool(row) and row[0] > time.time() * 1000


def test_serve_starts_everything_and_sigterm_stops_everything(tmp_path):
    proc, port = _serve(tmp_path)
    try:
        engine = open_store(f"sqlite:///{tmp_path / 'planner.db'}")
        wait_logged(lambda: _lease_live(engine), "the worker's lease", tmp_path / "serve.log")
        with engine.connect() as c:
            [(name, url, simulated)] = c.execute(sa.text("SELECT name, base_url, simulated FROM endpoint")).all()
        assert name == "simulated" and simulated
        assert urllib.request.urlopen(url + "/models", timeout=HANG_S).status == 200  # the simulated endpoint is up
        dashboard = _children(proc.pid)
        assert dashboard
        # alert notifications (the worker, in this process) and the dashboard link to the port it serves on
        environ = dict(v.split(b"=", 1) for v in open(f"/proc/{dashboard[0]}/environ", "rb").read().split(b"\0") if v)
        assert environ[b"TTFT_PLANNER_PUBLIC_URL"] == f"http://localhost:{port}".encode()
        everything = _children(proc.pid, dashboard_only=False)  # the probe processes too
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(HANG_S) == 0
        assert not _healthy(port)
        assert all(
            not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"
            for pid in everything
        )
        assert not _lease_live(engine)  # released on the way out
    finally:
        if proc.poll() is None:
            proc.kill()


def test_when_the_dashboard_dies_the_worker_stops_too(tmp_path):
    proc, port = _serve(tmp_path, "--no-simulator", "--probe-processes", "0")  # the worker and its dashboard only
    try:
        [dashboard] = _children(proc.pid)
        os.kill(dashboard, signal.SIGKILL)
        assert proc.wait(HANG_S) == 0
        assert "the dashboard exited" in (tmp_path / "serve.log").read_text()
    finally:
        if proc.poll() is None:
            proc.kill()


def test_serve_without_a_worker_stops_its_dashboard_on_sigterm_too(tmp_path):
    proc, port = _serve(tmp_path, "--no-simulator", "--no-worker")
    try:
        [dashboard] = _children(proc.pid)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(HANG_S) == 0
        # the dashboard is gone (or a zombie awaiting its reaper), not left serving on its own
        assert not os.path.exists(f"/proc/{dashboard}") or open(f"/proc/{dashboard}/stat").read().split()[2] == "Z"
        assert not _healthy(port)
    finally:
        if proc.poll() is None:
            proc.kill()
