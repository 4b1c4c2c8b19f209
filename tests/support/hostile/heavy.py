"""The memory-heavy cases (huge bodies, bombs, endless files), each in its own process, its peak RSS read.

`run_heavy(pairs, folder, …)` starts one subprocess (`python -m tests.support.hostile.heavy`) that imports every reader
once and then forks a child per (reader, case): the child makes a fresh Env under `folder`, runs the reader and
writes its outcomes; the subprocess waits for it with os.wait4, whose rusage gives the child's own peak RSS
(ru_maxrss: the imports it shares with the subprocess included, as a fresh process would hold them). A child still
running after `guard_s`, or whose RSS passes `kill_rss_mb` (so a runaway read cannot take the machine's memory), is
killed and reported so. Forking once the imports are done costs a child milliseconds, not the seconds of a fresh
interpreter.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["HeavyResult", "run_heavy"]

_POLL_S = 0.02


@dataclass(frozen=True)
class HeavyResult:
    """One heavy pair's run: its outcomes (as dicts of Outcome), or the traceback it raised, or why it was killed;
    and the child's peak RSS in MB."""

    outcomes: list[dict[str, Any]]
    error: str | None
    killed: str | None
    peak_rss_mb: float


def run_heavy(
    pairs: list[tuple[str, str]], folder: Path, *, deadline_s: float, guard_s: float, kill_rss_mb: float
) -> dict[tuple[str, str], HeavyResult]:
    """Run each (reader name, case id) in its own forked child (module docstring)."""
    spec = {"pairs": pairs, "folder": str(folder), "deadline_s": deadline_s, "guard_s": guard_s, "kill": kill_rss_mb}
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.hostile.heavy"],
        input=json.dumps(spec),
        capture_output=True,
        text=True,
        cwd=root,
        timeout=guard_s * (len(pairs) + 2) + 60,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    out: dict[tuple[str, str], HeavyResult] = {}
    for line in done.stdout.splitlines():
        got = json.loads(line)
        out[(got["reader"], got["case"])] = HeavyResult(got["outcomes"], got["error"], got["killed"], got["rss_mb"])
    missing = [p for p in pairs if tuple(p) not in out]
    assert not missing, f"the heavy runner gave no answer for {missing}; its stderr: {done.stderr[-3000:]}"
    return out


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _child(reader: str, case_id: str, folder: Path, deadline_s: float, result: Path) -> None:
    from tests.support.hostile.corpus import CASES
    from tests.support.hostile.outcome import Env
    from tests.support.hostile.readers import READERS

    try:
        env = Env(Path(tempfile.mkdtemp(dir=folder)))
        outcomes = READERS[reader].read(CASES[case_id], env, deadline_s)
        payload: dict[str, Any] = {"outcomes": [dataclasses.asdict(o) for o in outcomes], "error": None}
    except BaseException as exc:  # noqa: BLE001 - reported to the test, which fails with it
        payload = {"outcomes": [], "error": "".join(traceback.format_exception(exc))}
    result.write_text(json.dumps(payload))


def _main() -> None:
    spec = json.loads(sys.stdin.read())
    folder = Path(spec["folder"])
    import planner.cli  # noqa: F401
    import planner.kvcache.chains  # noqa: F401
    import planner.logs  # noqa: F401
    from tests.support.hostile import corpus, readers  # noqa: F401 - imported once, before the forks

    for n, (reader, case_id) in enumerate(spec["pairs"]):
        result = folder / f"heavy-{os.getpid()}-{n}.json"
        pid = os.fork()
        if pid == 0:
            try:
                _child(reader, case_id, folder, spec["deadline_s"], result)
            finally:
                os._exit(0)  # no cleanup of the parent's state in the child
        started, killed = time.monotonic(), None
        while True:
            done, _status, usage = os.wait4(pid, os.WNOHANG)
            if done:
                break
            if _rss_mb(pid) > spec["kill"]:
                killed = f"its RSS passed {spec['kill']:g} MB"
            elif time.monotonic() - started > spec["guard_s"]:
                killed = f"no answer within {spec['guard_s']:g} s"
            if killed:
                os.kill(pid, signal.SIGKILL)
                _, _status, usage = os.wait4(pid, 0)
                break
            time.sleep(_POLL_S)
        payload = json.loads(result.read_text()) if result.exists() and not killed else {"outcomes": [], "error": None}
        line = {"reader": reader, "case": case_id, "killed": killed, "rss_mb": usage.ru_maxrss / 1024, **payload}
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    _main()
