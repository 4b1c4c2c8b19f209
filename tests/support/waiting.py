"""Polling for a condition that another process makes true (a worker's lease, a request's status)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(pred: Callable[[], T], timeout_s: float = 30.0, what: str = "condition") -> T:
    """`pred()`'s first truthy value, polled every 0.1 s; AssertionError naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(0.1)  # the one polling interval of the tests: nothing to wait on but the condition itself
    raise AssertionError(f"timed out waiting for {what}")
