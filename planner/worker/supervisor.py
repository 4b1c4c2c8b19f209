"""The worker's task supervisor: background tasks that are restarted when they die, and the tasks a stop waits for.

A *supervised* task (housekeeping, the flusher) runs for the worker's whole life: when it dies with an error it is
logged, recorded (the last ten, for the dashboard's view of the worker) and restarted after a backoff that doubles
up to 30 s. A *spawned* task (a probe, a request) is one piece of work the stop lets finish, up to a grace, before
cancelling it.

Failures are stamped with the worker's injected clock (`now_ms`), never the system's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypedDict

__all__ = ["TaskFailure", "TaskSupervisor"]

log = logging.getLogger("planner.worker")

_KEEP_FAILURES = 10
_MAX_BACKOFF_S = 30.0


class TaskFailure(TypedDict):
    """One death of a supervised task, as the state file lists it."""

    task: str
    at_ms: int
    error: str


class TaskSupervisor:
    """Runs the worker's tasks. `on_failure()` is called after a supervised task died (the worker publishes its
    state then); `failures` lists the latest deaths ({"task", "at_ms", "error"})."""

    def __init__(self, *, now_ms: Callable[[], int], on_failure: Callable[[], None] = lambda: None) -> None:
        self.now_ms = now_ms
        self._on_failure = on_failure
        self.failures: list[TaskFailure] = []  # background tasks that died (and were restarted)
        self._background: list[asyncio.Task[None]] = []
        self._tasks: set[asyncio.Task[Any]] = set()

    def supervise(self, name: str, body: Callable[[], Awaitable[None]]) -> asyncio.Task[None]:
        """Run `body` until it returns: if it dies it is logged, recorded and restarted (backoff ≤ 30 s)."""

        async def keep_running() -> None:
            backoff_s = 1.0
            while True:
                try:
                    await body()
                    return
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - any bug: log, show, restart
                    log.exception("background task %s died: restarting it in %g s", name, backoff_s)
                    self.failures.append(
                        {"task": name, "at_ms": self.now_ms(), "error": f"{type(exc).__name__}: {exc}"[:300]}
                    )
                    del self.failures[:-_KEEP_FAILURES]
                    self._on_failure()
                    await asyncio.sleep(backoff_s)
                    backoff_s = min(_MAX_BACKOFF_S, backoff_s * 2)

        task = asyncio.create_task(keep_running(), name=name)
        self._background.append(task)
        return task

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run `coro` as a task the stop waits for (up to the grace)."""
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def drain(self, grace_s: float) -> None:
        """Let the spawned tasks finish for up to `grace_s`, then cancel the rest (and give them 2 s to unwind)."""
        if self._tasks:
            _, pending = await asyncio.wait(set(self._tasks), timeout=grace_s)
            for t in pending:
                t.cancel()
            if pending:
                await asyncio.wait(pending, timeout=2.0)

    async def stop_supervised(self) -> None:
        """Cancel the supervised tasks and wait until they are gone."""
        background, self._background = self._background, []
        for t in background:
            t.cancel()
        for t in background:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
