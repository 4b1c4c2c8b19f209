"""The dashboard under store faults: one sentence instead of a traceback, and the page stays usable.

Three layers, from the outside in:

- `run_page(nav)`: the router runs every page through it; a store failure that escapes a page ends that page's
  run with one sentence (what rendered before it stays on screen, the sidebar keeps working).
- `guarded`: the same for a function the router does not run itself (an auto-refreshing `st.fragment`).
- a write button adds one clause to its try: `except STORE_FAILURES as exc: show_store_failure(exc)`: it shows
  "…; your changes were not saved" and the rest of the page renders as usual.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import streamlit as st

from planner.inputs.untrusted import md_text
from planner.store.faults import NOT_SAVED, STORE_FAILURES, describe, is_store_failure

__all__ = ["STORE_FAILURES", "guarded", "run_page", "show_store_failure"]

F = TypeVar("F", bound=Callable[..., Any])
_ICON = ":material/database_off:"
READ_CONSEQUENCE = "this part of the page could not load; it retries on the next refresh"


def show_store_failure(exc: BaseException, consequence: str = NOT_SAVED) -> None:
    """One st.error sentence for a store failure (the driver's reason is outside text: shown as text)."""
    sentence = describe(exc, consequence=consequence)
    st.error(md_text(sentence[:1].upper() + sentence[1:] + "."), icon=_ICON)


def run_page(nav: Any) -> None:
    """Run the selected page; a store failure it raises becomes one sentence instead of a traceback."""
    try:
        nav.run()
    except Exception as exc:  # noqa: BLE001 - only store failures are handled; the rest re-raise unchanged
        if not is_store_failure(exc):
            raise
        show_store_failure(exc, READ_CONSEQUENCE + "; if you were saving something, it was not saved")


def guarded(fn: F) -> F:
    """Decorator: store failures inside `fn` (e.g. an auto-refreshing fragment) show one sentence and return None."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001
            if not is_store_failure(exc):
                raise
            show_store_failure(exc, READ_CONSEQUENCE)
            return None

    return wrapper  # type: ignore[return-value]
