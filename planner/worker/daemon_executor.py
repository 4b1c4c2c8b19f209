"""An executor of daemon threads for the worker's blocking database calls.

A call stuck on a frozen PostgreSQL or a locked SQLite file must not keep the
worker from stopping: asyncio's default executor joins its threads at exit (and
Python joins them again at interpreter exit), so a SIGTERM during an outage
would wait as long as the database does. Here each call runs in its own daemon
thread and shutting down waits for nobody; the worker bounds its own waits and
spools what it could not write (planner.worker.spool).
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable
from typing import ParamSpec, TypeVar

__all__ = ["DaemonThreadExecutor"]

P = ParamSpec("P")
T = TypeVar("T")


class DaemonThreadExecutor(concurrent.futures.ThreadPoolExecutor):
    """submit() runs fn in a new daemon thread; shutdown() never waits (a ThreadPoolExecutor only in name,
    which asyncio's set_default_executor requires)."""

    def submit(  # noqa: D102 - concurrent.futures.Executor's contract
        self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs
    ) -> concurrent.futures.Future[T]:
        fut: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            if not fut.set_running_or_notify_cancel():
                return
            try:
                fut.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - handed to the awaiting coroutine
                fut.set_exception(exc)

        threading.Thread(target=run, name="planner-db", daemon=True).start()
        return fut

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:  # noqa: D102
        return None
