"""`ttft-planner worker` as users run it: a fresh interpreter, its output in a log file, stopped with SIGTERM.

Tests wait for what a worker does (a row stored, a lease taken, a line in its log) with `wait_logged` and
`wait_for_line`, never for a time; their limit, HANG_S, only tells a hung worker from a slow one."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TypeVar

from tests.support.waiting import wait_for

__all__ = [
    "HANG_S",
    "running_worker",
    "spawn_worker",
    "spawn_worker_on",
    "stop_worker",
    "wait_for_line",
    "wait_logged",
]

T = TypeVar("T")

FAST_PROBES_ENV = {"TTFT_PLANNER_MIN_INTERVAL_S": "0.2"}  # endpoints may then probe every 0.2 s

#: A hang guard for waits on a worker process (its start, a stop, an event): generous, because four suites may share
#: two cores; a worker that needs longer is hung, not slow.
HANG_S = 120.0


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


def spawn_worker_on(
    db_url: str, log: Path, *args: str, env: Mapping[str, str | None] | None = None
) -> subprocess.Popen:
    """A worker on the database at `db_url` that allows 0.2 s probe intervals (`env` overlays more variables)."""
    return spawn_worker(log, *args, env={"TTFT_PLANNER_DATABASE_URL": db_url, **FAST_PROBES_ENV, **(env or {})})


def stop_worker(proc: subprocess.Popen, timeout_s: float = HANG_S) -> int | None:
    """SIGTERM (the clean stop users get from Ctrl-C or systemd), wait up to timeout_s (a hang guard), then kill; the
    exit status, or None when it had to be killed."""
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
    log: Path, *args: str, env: Mapping[str, str | None] | None = None, stop_timeout_s: float = HANG_S
) -> Iterator[subprocess.Popen]:
    """spawn_worker for the length of a `with` block, stopped by stop_worker on the way out."""
    proc = spawn_worker(log, *args, env=env)
    try:
        yield proc
    finally:
        stop_worker(proc, stop_timeout_s)


def wait_logged(pred: Callable[[], T], what: str, *logs: Path, timeout_s: float = HANG_S) -> T:
    """wait_for(pred); when it hangs, the error ends with the tails of the workers' `logs` (what they were doing)."""
    try:
        return wait_for(pred, timeout_s, what)
    except AssertionError as exc:
        tails = "".join(f"\n--- {p.name}:\n{p.read_text()[-1500:]}" for p in logs if p.exists())
        raise AssertionError(f"{exc}{tails}") from None


def wait_for_line(log: Path, pattern: str, timeout_s: float = HANG_S) -> re.Match[str]:
    """The first match of the regular expression `pattern` in the worker's `log`, once the worker has written it."""
    return wait_logged(
        lambda: re.search(pattern, log.read_text()), f"{pattern!r} in {log.name}", log, timeout_s=timeout_s
    )
