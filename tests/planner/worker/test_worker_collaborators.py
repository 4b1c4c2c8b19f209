"""The worker's collaborators: small modules, each on the clock it is given.

The Worker (planner.worker.runner) is a composition; every collaborator reads time from the clock it was handed
(the Worker's SteadyClock, itself over injectable clocks), so a test that moves a FakeClock sees every decision
follow. Reading the system's clock directly is allowed only as a seam's default argument (SteadyClock's sources,
a real-seconds pacing default): nowhere in a body.
"""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

from planner.worker.supervisor import TaskSupervisor
from tests.support.fake_clock import FakeClock

ROOT = Path(__file__).resolve().parents[3]
WORKER = ROOT / "planner" / "worker"
MAX_LINES = 400

#: Calls that read the system's clock.
_CLOCK_CALLS = {
    ("time", "time"),
    ("time", "monotonic"),
    ("time", "perf_counter"),
    ("time", "time_ns"),
    ("time", "monotonic_ns"),
    ("time", "perf_counter_ns"),
    ("datetime", "now"),
    ("datetime", "utcnow"),
    ("loop", "time"),
}


def _default_nodes(tree: ast.AST) -> set[int]:
    """ids of every node inside a function's default arguments (a seam's default may name the real clock)."""
    out: set[int] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            for default in [*fn.args.defaults, *(d for d in fn.args.kw_defaults if d is not None)]:
                out |= {id(n) for n in ast.walk(default)}
    return out


def test_no_worker_module_reads_the_system_clock_outside_a_seams_default():
    offenders = []
    for path in sorted(WORKER.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        defaults = _default_nodes(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)) or id(node) in defaults:
                continue
            owner = node.func.value
            name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
            if (name, node.func.attr) in _CLOCK_CALLS:
                offenders.append(f"{path.name}:{node.lineno} {name}.{node.func.attr}()")
    assert offenders == []


def test_every_worker_module_is_small():
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in WORKER.glob("*.py")}
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}


def test_a_supervised_task_that_dies_is_stamped_on_the_given_clock_and_restarted():
    clock = FakeClock(start_ms=1_796_000_000_000)
    published: list[int] = []
    sup = TaskSupervisor(now_ms=clock.steady().now_ms, on_failure=lambda: published.append(len(sup.failures)))
    runs = 0

    async def body() -> None:
        nonlocal runs
        runs += 1
        if runs == 1:
            raise OverflowError("cannot convert float infinity to integer")

    async def main() -> None:
        task = sup.supervise("housekeeping", body)
        await asyncio.wait_for(task, 120.0)  # a hang guard (the restart waits its 1 s backoff), not a figure
        await sup.stop_supervised()

    asyncio.run(main())
    assert runs == 2  # restarted once, then it returned
    assert sup.failures == [
        {
            "task": "housekeeping",
            "at_ms": 1_796_000_000_000,
            "error": "OverflowError: cannot convert float infinity to integer",
        }
    ]
    assert published == [1]  # the worker was told (it publishes its state then)
