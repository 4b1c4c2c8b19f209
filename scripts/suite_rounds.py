"""Run the whole suite as CI does, several clean clones at once, and report each run's time, result and load.

    python3 scripts/suite_rounds.py [--rounds 2] [--suites 4] [--ref HEAD] [--workdir /tmp/suite-rounds]

Each suite is `git clone <this checkout> && CI=true bash .ci/run` (system packages, a fresh venv, lint, the whole
suite with Chromium and a private PostgreSQL) with its own pytest temp root. The suites of a round start together,
so each one runs beside the others' browser, worker and database tests: the harshest load a 2-core machine sees.
Prints one line per suite (seconds, pass/fail, pytest's summary line) and the 1-minute load average sampled every
10 s (median and max) per round. Exit status 1 when any suite failed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _summary(log: Path) -> str:
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if " passed" in ln or " failed" in ln]
    return lines[-1].strip("= ") if lines else "(no pytest summary: see the log)"


def _sample_load(stop: threading.Event, out: list[float]) -> None:
    while not stop.wait(10):
        out.append(os.getloadavg()[0])


def run_round(k: int, suites: int, ref: str, workdir: Path) -> bool:
    procs = []
    for s in range(suites):
        clone = workdir / f"r{k}s{s}"
        subprocess.run(["rm", "-rf", str(clone)], check=True)
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        subprocess.run(["git", "-C", str(clone), "checkout", "-q", ref], check=True)
        tmp = workdir / f"r{k}s{s}-tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "CI": "true", "PYTEST_DEBUG_TEMPROOT": str(tmp)}
        log = workdir / f"r{k}s{s}.log"
        with open(log, "w") as out:
            p = subprocess.Popen(["bash", ".ci/run"], cwd=clone, env=env, stdout=out, stderr=subprocess.STDOUT)
        procs.append((s, p, time.monotonic(), log))
    stop, loads = threading.Event(), []
    sampler = threading.Thread(target=_sample_load, args=(stop, loads), daemon=True)
    sampler.start()
    ok = True
    for s, p, t0, log in procs:
        rc = p.wait()
        ok &= rc == 0
        print(f"round {k} suite {s}: {time.monotonic() - t0:7.0f} s  rc={rc}  {_summary(log)}", flush=True)
    stop.set()
    if loads:
        print(f"round {k}: load average (1 min) median {statistics.median(loads):.1f}, max {max(loads):.1f}")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--suites", type=int, default=4, help="clean clones run at once in each round")
    ap.add_argument("--ref", default="HEAD", help="the commit each clone checks out")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/suite-rounds"))
    args = ap.parse_args()
    ref = subprocess.run(["git", "-C", str(ROOT), "rev-parse", args.ref], capture_output=True, text=True, check=True)
    args.workdir.mkdir(parents=True, exist_ok=True)
    print(f"commit {ref.stdout.strip()[:12]}, {args.rounds} round(s) of {args.suites} suite(s), {os.cpu_count()} CPUs")
    ok = all([run_round(k, args.suites, ref.stdout.strip(), args.workdir) for k in range(1, args.rounds + 1)])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
