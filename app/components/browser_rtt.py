"""Browser RTT component: measures from the user's browser to each chosen target and returns the samples.

The JS (browser_rtt.js, an ES module; no eval) uses Resource Timing
(responseStart − requestStart) and falls back, labelled, to performance.now()
around fetch only when the target does not send Timing-Allow-Origin. The user's
location label is remembered in the browser's localStorage and handed back.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit as st

__all__ = ["BrowserRtt", "browser_rtt", "KEY"]

_DIR = Path(__file__).resolve().parent
KEY = "browser_rtt"

_component = st.components.v2.component(
    "browser_rtt",
    html=(_DIR / "browser_rtt.html").read_text(),
    css=(_DIR / "browser_rtt.css").read_text(),
    js=(_DIR / "browser_rtt.js").read_text(),
)


@dataclass(frozen=True)
class BrowserRtt:
    """What the component handed back: the last run's payload (or None) and a remembered vantage label."""

    result: dict[str, Any] | None
    remembered_vantage: str | None


def _noop() -> None:
    pass


def browser_rtt(targets: list[dict[str, str]], *, vantage: str, n: int = 10, timeout_ms: int = 5000) -> BrowserRtt:
    """Mount the component. targets: [{"region_id", "url"}]; vantage: the user's location label ("" = ask)."""
    res = _component(
        key=KEY,
        data={"targets": targets, "vantage": vantage, "n": int(n), "timeout_ms": int(timeout_ms)},
        default={"result": None, "remembered_vantage": None},
        on_result_change=_noop,
        on_remembered_vantage_change=_noop,
        height="content",
    )
    result = getattr(res, "result", None)
    remembered = getattr(res, "remembered_vantage", None)
    return BrowserRtt(
        result=result if isinstance(result, dict) else None,
        remembered_vantage=remembered if isinstance(remembered, str) and remembered else None,
    )
