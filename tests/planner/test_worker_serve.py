"""`ttft-planner serve`: dashboard, worker and simulated endpoint start together and stop together."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import sqlalchemy as sa

from planner.store import open_store


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _healthy(port: int) -> bool:
    try:
        return urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1).read() == b"ok"
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


def _serve(tmp_path):
    port = _free_port()
    env = {**os.environ, "TTFT_PLANNER_DATA_DIR": str(tmp_path)}
    env.pop("TTFT_PLANNER_DATABASE_URL", None)
    log = open(tmp_path / "serve.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-c", "from planner.cli import main; main()", "serve", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while not _healthy(port):
        assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "serve.log").read_text()[-2000:]
        time.sleep(0.3)
    return proc, port


def _lease_live(engine) -> bool:
    with engine.connect() as c:
        row = c.execute(sa.text("SELECT expires_at_ms FROM worker_lease WHERE vantage = ''")).first()
    return bool(row) and row[0] > time.time() * 1000


def test_serve_starts_everything_and_sigterm_stops_everything(tmp_path):
    proc, port = _serve(tmp_path)
    try:
        engine = open_store(f"sqlite:///{tmp_path / 'planner.db'}")
        deadline = time.monotonic() + 20
        while not _lease_live(engine):
            assert time.monotonic() < deadline, "the worker never took its lease"
            time.sleep(0.3)
        with engine.connect() as c:
            [(name, url, simulated)] = c.execute(sa.text("SELECT name, base_url, simulated FROM endpoint")).all()
        assert name == "simulated" and simulated
        assert urllib.request.urlopen(url + "/models", timeout=2).status == 200  # the simulated endpoint is up
        dashboard = _children(proc.pid)
        assert dashboard
        everything = _children(proc.pid, dashboard_only=False)  # the probe processes too
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
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
    proc, port = _serve(tmp_path)
    try:
        [dashboard] = _children(proc.pid)
        os.kill(dashboard, signal.SIGKILL)
        assert proc.wait(20) == 0
        assert "the dashboard exited" in (tmp_path / "serve.log").read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
