"""The request log read on the Logs page in this session, offered to Capacity & cost and What-if before it is saved.

The Logs page offers what it read from files (an upload or a sample: `offer`) and takes it back when that reading
goes (`withdraw`: cleared, replaced, or a stored log on show instead); the other pages list it beside the stored
uploads (`offered`) and read its frame, the same requests the Logs page summarises. Nothing is stored: it lives in
this browser session only, like the upload itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import streamlit as st

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["CHOICE", "SessionLog", "offer", "offered", "withdraw"]

#: The pickers' option for the session's log: a str, never taken for an upload's id (an int) or "source-<id>".
CHOICE = "session-log"
_KEY = "session_log"
_SERIAL = "session_log_serial"
# Inputs keyed by the traffic choice (Capacity & cost's tabs) take ints: uploads are positive, sources their id
# negated, typed numbers 0; a session log's keys sit far below any source id, one per reading.
_TAB_KEY_BASE = -(1 << 62)


@dataclass(frozen=True)
class SessionLog:
    """One reading on the Logs page: `key` changes with the log or its read options, `label` names its files, `frame`
    holds its requests (planner.logs.COLUMNS), `serial` counts the readings offered in this session."""

    key: str
    label: str
    frame: pd.DataFrame
    serial: int

    @property
    def n_requests(self) -> int:
        return len(self.frame)

    @property
    def choice_label(self) -> str:
        """How a picker lists it: "read on the Logs page: agent.jsonl (400 requests, not saved)"."""
        return f"read on the Logs page: {self.label} ({self.n_requests:,} requests, not saved)"

    @property
    def tab_key(self) -> int:
        """An int for inputs keyed by the traffic choice: new with every reading, never an upload's or a source's."""
        return _TAB_KEY_BASE - self.serial


def offer(key: str, label: str, frame: pd.DataFrame) -> None:
    """Offer the Logs page's reading `key` (its files' `label`, its requests `frame`) to the other pages."""
    ss = st.session_state
    current = ss.get(_KEY)
    if current is not None and current.key == key and current.frame is frame:
        return
    ss[_SERIAL] = int(ss.get(_SERIAL, 0)) + 1
    ss[_KEY] = SessionLog(key, label, frame, ss[_SERIAL])


def withdraw() -> None:
    """Stop offering the session's log (its reading was cleared or replaced)."""
    st.session_state.pop(_KEY, None)


def offered() -> SessionLog | None:
    """The log the Logs page read in this session and offers, or None."""
    return st.session_state.get(_KEY)
