"""`ttft-planner worker` as users run it: a fresh interpreter, its output in a log file, stopped with SIGTERM."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

__all__ = ["running_worker", "spawn_worker", "spawn_worker_on", "stop_worker"]

FAST_PROBES_ENV = {"TTFT_PLANNER_MIN_INTERVAL_S": "0.2"}  # endpoints may then probe every 0.2 s


def spawn_worker(log: Path, *args: str, env: Mapping[str, str | None] | None = None) -> subprocess.Popen:
    """Start `ttft-planner worker *args` with os.environ overlaid by `env` (None removes a variable); its stdout and
    stderr go to `log`."""
    full = dict(os.environ)
    for name, value in (env or {}).items():
        if value is None:
            full.pop(name, None)
        else:
            full[name] = value
    with open(log, "w") as out:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            [sys.executable, "-c", "from planner.cli import main; main()", "worker", *args],
            env=full,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def spawn_worker_on(db_url: str, log: Path, *args: str) -> subprocess.Popen:
    """A worker on the database at `db_url` that allows 0.2 s probe intervals."""
    return spawn_worker(log, *args, env={"TTFT_PLANNER_DATABASE_URL": db_url, **FAST_PROBES_ENV})


def stop_worker(proc: subprocess.Popen, timeout_s: float = 20.0) -> int | None:
    """SIGTERM (the clean stop users get from Ctrl-C or systemd), wait up to timeout_s, then kill; the exit status,
    or None when it had to be killed."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return None


@contextlib.contextmanager
def running_worker(
    log: Path, *args: str, env: Mapping[str, str | None] | None = None, stop_timeout_s: float = 20.0
) -> Iterator[subprocess.Popen]:
    """spawn_worker for the length of a `with` block, stopped by stop_worker on the way out."""
    proc = spawn_worker(log, *args, env=env)
    try:
        yield proc
    finally:
        stop_worker(proc, stop_timeout_s)
