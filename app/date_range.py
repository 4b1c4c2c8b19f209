"""The one date-range picker of the Probes and Compare pages: same default, same zone, same bounds.

Default: the last 7 days, today included, in the viewer's time zone (ttft_planner_app.viewer).
Returns whole days as [start_ms, end_ms) UTC epoch ms, plus a label that names the zone.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from ttft_planner_app.viewer import time_zone

__all__ = ["DEFAULT_DAYS", "DateRange", "date_range_input", "day_range"]

DEFAULT_DAYS = 7


@dataclass(frozen=True)
class DateRange:
    first: dt.date
    last: dt.date
    start_ms: int
    end_ms: int
    tz: str

    @property
    def label(self) -> str:
        days = f"{self.first}" if self.first == self.last else f"{self.first} – {self.last}"
        return f"{days} ({self.tz})"


def day_range(first: dt.date, last: dt.date, tz: str) -> DateRange:
    """Whole days first..last (inclusive) in `tz` as [start_ms, end_ms)."""
    zone = ZoneInfo(tz)
    start = dt.datetime.combine(first, dt.time(), zone)
    end = dt.datetime.combine(last + dt.timedelta(days=1), dt.time(), zone)
    return DateRange(first, last, int(start.timestamp() * 1000), int(end.timestamp() * 1000), tz)


def date_range_input(container, key: str) -> DateRange | None:
    """Draw the date-range picker in `container`; None while only one end is picked."""
    tz = time_zone()
    today = dt.datetime.now(ZoneInfo(tz)).date()
    picked = container.date_input(
        f"Date range ({tz})",
        value=(today - dt.timedelta(days=DEFAULT_DAYS - 1), today),
        max_value=today,
        key=key,
        help=f"Whole days in {tz} (the sidebar's time zone); default the last {DEFAULT_DAYS} days.",
    )
    if isinstance(picked, (tuple, list)):
        if len(picked) != 2:
            return None
        first, last = picked
    else:
        first = last = picked
    return day_range(first, last, tz)
