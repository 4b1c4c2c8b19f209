"""An in-process Worker that a test drives: on a FakeClock, slot by slot, waiting for what the worker does.

`drive(engine, body, clock=...)` starts a Worker, waits until it holds its vantage's lease, runs the test's
`await body(worker)` beside it and then stops it (the stop's final flush stores every row still in memory).
Inside `body`:

- `await step(worker, clock)` moves the clock to the schedule's next firing time and waits until the worker has
  decided every slot due then and their probes have ended; it returns those (job key, slot ms). The worker sees
  the clock move within `max_tick_s` (10 ms here), so a test's slots are the same on any machine: none is late,
  none is skipped because the previous probe was still running, unless the test lets it;
- `await until(pred, what)` waits for an event the worker makes (a row stored, a request's status); its timeout
  is only a guard against a hang, generous because several suites may share two cores;
- `await housekeeping_passes(worker)` waits until housekeeping has looked at the clock a few more times: before
  asserting that a chore did not run.

How late a worker fires on a real clock is a benchmark's figure (bench/bench_worker.py), not a test's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection
from typing import Any, TypeVar

from sqlalchemy.engine import Engine

from planner.worker.runner import Worker, WorkerConfig
from tests.support.fake_clock import FakeClock

__all__ = ["HANG_GUARD_S", "drive", "housekeeping_passes", "step", "until"]

T = TypeVar("T")

#: How long `until` waits before calling it a hang (real seconds): not a speed check.
HANG_GUARD_S = 120.0

#: Worker settings for in-process tests: probes in the worker's own loop (the probe processes are
#: test_worker_isolation.py's subject), a lease no fake-clock step outlasts, quick looks at the clock and the buffer.
_DEFAULTS: dict[str, Any] = {
    "lease_ttl_s": 300.0,
    "request_poll_s": 0.2,
    "flush_interval_s": 0.1,
    "max_tick_s": 0.01,
    "probe_processes": 0,
}


async def until(pred: Callable[[], T], what: str, *, in_thread: bool = False, timeout_s: float = HANG_GUARD_S) -> T:
    """`pred()`'s first truthy value, checked every 10 ms; AssertionError naming `what` after `timeout_s`.

    The asyncio twin of tests/support/waiting.wait_for, for tests that share a loop with the worker: it never blocks
    the loop. `in_thread`: run `pred` in a thread (it reads the database)."""

    async def poll() -> T:
        while not (value := (await asyncio.to_thread(pred)) if in_thread else pred()):
            await asyncio.sleep(0.01)  # polls the condition without blocking the worker's loop (as wait_for does)
        return value

    try:
        return await asyncio.wait_for(poll(), timeout_s)  # the loop's own timeout: a hang guard, not a figure
    except TimeoutError:
        raise AssertionError(f"no {what} within {timeout_s:g} s (a hang guard)") from None


def drive(
    engine: Engine,
    body: Callable[[Worker], Awaitable[T]],
    *,
    clock: FakeClock | None = None,
    probe: Callable[..., Awaitable[Any]] | None = None,
    **config: Any,
) -> T:
    """Run a Worker on `engine` (on `clock`, else the real clocks; probing with `probe`, else for real; settings
    `config` over this module's defaults) until `await body(worker)` returns, then stop it and return what `body`
    returned. `body` starts once the worker holds its lease; an error in the worker's start is raised here."""
    worker = Worker(engine, WorkerConfig(**(_DEFAULTS | config)), clock=clock.steady() if clock else None, probe=probe)

    async def main() -> T:
        task = asyncio.create_task(worker.run())
        try:
            await until(lambda: worker.holds_lease or task.done(), "lease taken by the worker")
            if task.done():
                task.result()  # it failed to start: raise why
            return await body(worker)
        finally:
            worker.request_stop()
            await task

    return asyncio.run(main())


def _open(worker: Worker, slots: dict[str, int], wait: Collection[str] | None) -> list[str]:
    """Jobs of `slots` the worker has not yet decided (or, for those in `wait`, whose probe still runs)."""
    pending = []
    for key, slot in slots.items():
        job = worker.scheduler.jobs.get(key)
        if job is None:  # removed by a reload: nothing more to wait for
            continue
        if job.next_slot_ms <= slot or (job.in_flight and (wait is None or key in wait)):
            pending.append(key)
    return pending


async def step(worker: Worker, clock: FakeClock, *, wait: Collection[str] | None = None) -> list[tuple[str, int]]:
    """Move `clock` to the schedule's next firing time and wait until the worker has decided every slot due then and
    their probes have ended (with `wait`, only the probes of those job keys: the others may still run during the next
    steps). Returns the (job key, slot ms) decided, oldest first."""
    fire = await until(worker.scheduler.next_fire_ms, "job in the schedule")
    assert fire is not None  # until returns a truthy value
    clock.advance_to(max(clock.ms, fire))
    due = {key: job.next_slot_ms for key, job in worker.scheduler.jobs.items() if job.fire_at_ms() <= clock.ms}
    await until(lambda: not _open(worker, due, wait), f"decision on the slots due at {clock.ms}")
    return sorted(due.items(), key=lambda kv: (kv[1], kv[0]))


async def housekeeping_passes(worker: Worker, n: int = 5) -> None:
    """Wait until the worker's housekeeping has made `n` more passes (each looks at the clock once): what a test
    waits for before saying a chore did NOT run. Counts the lease holder's question "is an alert pass due?", which
    each of its passes asks once."""
    asked = 0
    due = worker.team.due

    def counting(now_ms: int) -> bool:
        nonlocal asked
        asked += 1
        return due(now_ms)

    worker.team.due = counting  # type: ignore[method-assign]
    try:
        await until(lambda: asked >= n, f"{n} housekeeping passes")
    finally:
        del worker.team.due  # the class's method again
