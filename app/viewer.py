"""The viewer's settings shared by every page: the time zone every timestamp is shown in.

One setting, default the browser's zone (`st.context.timezone`), chosen once in the
sidebar and kept in session state across pages; every page reads `time_zone()` and
labels its timestamps with `zone_label()`.
"""

from __future__ import annotations

import datetime as dt
from functools import lru_cache
from zoneinfo import ZoneInfo, available_timezones

import streamlit as st

__all__ = ["KEY", "fmt_ms", "sidebar_time_zone", "time_zone", "zone_label", "zones"]

KEY = "viewer_tz"


@lru_cache(maxsize=1)
def zones() -> list[str]:
    return sorted(available_timezones())


def _default() -> str:
    browser = st.context.timezone or "UTC"
    return browser if browser in zones() else "UTC"


def time_zone() -> str:
    """The viewer's time zone (IANA name)."""
    tz = st.session_state.get(KEY)
    return tz if tz in zones() else _default()


def sidebar_time_zone() -> str:
    """Draw the one time-zone selector (in the sidebar, by the router) and return the zone."""
    current = time_zone()
    # A widget key of its own, copied into KEY: session-state values of widgets vanish when a page does not draw them.
    st.session_state.setdefault("_viewer_tz_widget", current)
    picked = st.sidebar.selectbox(
        "Time zone",
        zones(),
        key="_viewer_tz_widget",
        help="Every timestamp and hour of day on every page is shown in this zone (default: your browser's).",
    )
    st.session_state[KEY] = picked
    return picked


def zone_label(tz: str | None = None) -> str:
    """A short label for the zone, e.g. 'Europe/Berlin'."""
    return tz or time_zone()


def fmt_ms(epoch_ms: int | float | None, tz: str | None = None, fmt: str = "%Y-%m-%d %H:%M") -> str:
    """An epoch-ms timestamp in the viewer's zone, with the zone named: '2026-11-30 14:05 Europe/Berlin'."""
    if epoch_ms is None:
        return "—"
    zone = tz or time_zone()
    return dt.datetime.fromtimestamp(epoch_ms / 1000, ZoneInfo(zone)).strftime(fmt) + f" {zone}"
