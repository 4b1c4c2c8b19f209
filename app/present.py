"""The pages' name for planner.present: one way to show a figure, shared with the command line (units, rounding,
"—" for absent, the one "(too few)" mark). Kept so the pages' `present.ms(...)` reads as before; nothing is defined
here."""

from planner.present import (
    LABELS,
    MISSING,
    TOO_FEW,
    count,
    display_frame,
    is_missing,
    label,
    ms,
    number,
    pct,
    rate,
    seconds,
    signed_ms,
    tokens,
    too_few,
    usd,
)

__all__ = [
    "LABELS",
    "MISSING",
    "TOO_FEW",
    "count",
    "display_frame",
    "is_missing",
    "label",
    "ms",
    "number",
    "pct",
    "rate",
    "seconds",
    "signed_ms",
    "tokens",
    "too_few",
    "usd",
]
