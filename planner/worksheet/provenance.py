"""A figure that moves between pages, with where it came from.

Every segment, rate or count that fills the worksheet is a `Figure`: a value
with its unit and its provenance (source, detail, n, window, measured-at). A
typed value can always override a measured one; `Figure.typed` makes one.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass, replace
from enum import StrEnum
from typing import Any
from zoneinfo import ZoneInfo

__all__ = ["Figure", "Source"]


class Source(StrEnum):
    """Where a figure came from."""

    TYPED = "typed"
    PROBE = "probe"
    COLD_READING = "cold reading"
    RTT = "rtt"
    LOG = "log"
    MODEL = "model"
    PRESET = "preset"


@dataclass(frozen=True)
class Figure:
    """A number with unit and provenance.

    value: the number, in `unit` (e.g. "ms", "tokens", "tokens/s", "fraction").
    source: how it was obtained; detail: which endpoint/region/file/model;
    n: sample size behind it (None for typed/model values); window: the time or
    row window it summarises; measured_at_ms: UTC epoch ms of the measurement.
    """

    value: float
    unit: str
    source: Source = Source.TYPED
    detail: str = ""
    n: int | None = None
    window: str = ""
    measured_at_ms: int | None = None

    @classmethod
    def typed(cls, value: float, unit: str) -> Figure:
        """A value entered by hand."""
        return cls(value=float(value), unit=unit)

    def with_value(self, value: float) -> Figure:
        """Same figure, new value; a changed value is a typed override."""
        if value == self.value:
            return self
        return Figure.typed(value, self.unit)

    @property
    def is_measured(self) -> bool:
        return self.source not in (Source.TYPED, Source.PRESET)

    def describe(self, tz: str = "UTC") -> str:
        """One-line provenance, e.g. 'probe · sim-local · n=240 · 2026-11-30 15:02 Europe/Berlin'.

        tz: the IANA zone the measured-at time is shown in (the viewer's on the dashboard), named after it.
        """
        if self.source == Source.TYPED:
            return "entered by hand"
        parts = [str(self.source)]
        if self.detail:
            parts.append(self.detail)
        if self.n is not None:
            parts.append(f"n={self.n}")
        if self.window:
            parts.append(self.window)
        if self.measured_at_ms is not None:
            when = dt.datetime.fromtimestamp(self.measured_at_ms / 1000, tz=ZoneInfo(tz))
            parts.append(when.strftime("%Y-%m-%d %H:%M") + f" {tz}")
        return " · ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["source"] = str(self.source)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Figure:
        """Inverse of to_dict; raises ValueError on a malformed record."""
        try:
            return cls(
                value=float(d["value"]),
                unit=str(d["unit"]),
                source=Source(d.get("source", "typed")),
                detail=str(d.get("detail", "")),
                n=None if d.get("n") is None else int(d["n"]),
                window=str(d.get("window", "")),
                measured_at_ms=None if d.get("measured_at_ms") is None else int(d["measured_at_ms"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a figure record: {d!r} ({exc})") from exc

    def replace(self, **changes: Any) -> Figure:
        return replace(self, **changes)
