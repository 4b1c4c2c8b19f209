"""Stopping a server process a test or benchmark started: asked first, killed if it does not go."""

from __future__ import annotations

import subprocess
from typing import IO

__all__ = ["stop_process"]


def stop_process(proc: subprocess.Popen, log: IO[str], grace_s: float = 10.0) -> None:
    """SIGTERM `proc`, SIGKILL it if it has not exited within grace_s, then close `log` (the file it wrote to)."""
    proc.terminate()
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()
