"""One way to show a figure, for the pages and the command line alike: units, rounding, "—" for absent, one mark
for a figure resting on too few samples. No Streamlit here.

Nothing a user reads shows an internal column name, a raw code, NaN/None/NaT or an unformatted float: each value is
formatted by the function named for its unit (`ms`, `seconds`, `usd`, `pct`, `tokens`, `count`, `rate`, `number`),
and a table passes through `display_frame`, which renames columns from `LABELS` and refuses (in tests) a snake_case
name that has no label. A percentile from fewer samples than it needs (planner.percentiles.min_n_for: a p95 from n < 20
is only the largest value) is marked `too_few(text, enough)` — "164 ms (too few)" — on every page and in every command.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pandas only for the pages' tables: the commands format numbers without loading it
    import pandas as pd

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

MISSING = "—"

#: The one mark of a figure resting on fewer samples than it needs (a p95 from n < 20 is only the largest value).
TOO_FEW = "(too few)"


def too_few(text: str, enough: bool) -> str:
    """`text` as shown, marked TOO_FEW when the figure behind it rests on too few samples (`enough` False): "164 ms
    (too few)". An absent figure stays "—" (there is nothing to doubt)."""
    return text if enough or text == MISSING else f"{text} {TOO_FEW}"


# Internal column name → what a user reads (with its unit). Add a row when a new column reaches a page.
LABELS: dict[str, str] = {
    "endpoint": "Endpoint",
    "vantage": "Vantage",
    "n": "Samples (n)",
    "n_ok": "Successful samples",
    "ttft_p50_ms": "TTFT p50 (ms)",
    "ttft_p90_ms": "TTFT p90 (ms)",
    "ttft_p95_ms": "TTFT p95 (ms)",
    "ttft_p99_ms": "TTFT p99 (ms)",
    "error_rate": "Error rate",
    "monthly_cost_usd": "Monthly cost ($)",
    "output_tokens_mean": "Mean output tokens",
    "prompt_tokens": "Prompt tokens",
    "targets_met": "Targets met",
    "rank": "Rank",
    "load": "Load",
    "n_sent": "Requests sent",
    "offered_rps": "Offered (req/s)",
    "achieved_rps": "Achieved (req/s)",
    "send_lag_p95_ms": "Send lag p95 (ms)",
    "client_cpu_ms_per_request": "Client CPU per request (ms)",
    "model": "Model",
    "prompt_tokens_p50": "Prompt tokens p50",
    "prompt_tokens_p95": "Prompt tokens p95",
    "p95_reliable": "p95 reliable (n ≥ 20)",
    "cached_token_fraction": "Cached share of prompt tokens",
    # Alerts page
    "state": "State",
    "rule": "Rule",
    "value": "Value",
    "threshold": "Threshold",
    "since": "Since",
    "evaluated": "Evaluated",
    "at": "At",
    "transition": "Transition",
    "message": "Message",
    "event_id": "Event",
    "channel": "Channel",
    "target": "Sent to",
    "attempts": "Attempts",
    "delivered": "Delivered",
    "next_attempt": "Next attempt",
    "last_error": "Last error",
    # Admin page
    "actor": "Who",
    "role": "Role",
    "action": "Action",
    "object_name": "What",
    "detail": "Detail",
    "least_role": "Least role",
    "you": "You may",
}

_SNAKE = re.compile(r"^[a-z0-9]+(_[a-z0-9]+)+$")


def is_missing(v: Any) -> bool:
    """True for None, NaN, NaT and pandas NA."""
    if v is None:
        return True
    if isinstance(v, float):
        return math.isnan(v)
    if isinstance(v, (int, str)):
        return False
    pandas = sys.modules.get("pandas")  # a NaT or NA exists only once pandas is loaded
    try:
        return bool(pandas.isna(v)) if pandas is not None else bool(v != v)
    except (TypeError, ValueError):
        return False


def _finite(v: Any) -> float | None:
    if is_missing(v):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def ms(v: Any, digits: int = 0) -> str:
    """A duration in milliseconds: '1,234 ms', '−115 ms' (true minus sign), '—' when missing."""
    f = _finite(v)
    if f is None:
        return MISSING
    s = f"{abs(f):,.{digits}f} ms"
    return ("−" + s) if f < 0 and round(abs(f), digits) != 0 else s


def signed_ms(v: Any, digits: int = 0) -> str:
    """A difference in ms with an explicit sign: '+12 ms', '−3 ms'."""
    f = _finite(v)
    if f is None:
        return MISSING
    body = f"{abs(f):,.{digits}f} ms"
    return ("−" if f < 0 else "+") + body


def seconds(v: Any, digits: int = 1) -> str:
    """A duration in seconds: '1.5 s', '−2.0 s' (true minus sign), '—' when missing."""
    f = _finite(v)
    return MISSING if f is None else f"{f:,.{digits}f} s".replace("-", "−")


def number(v: Any, digits: int = 0) -> str:
    """A figure whose unit is said elsewhere (a column's header, the line's end): '1,234', '−3.5', '—' when missing
    or not finite."""
    f = _finite(v)
    if f is None:
        return MISSING
    s = f"{abs(f):,.{digits}f}"
    return ("−" + s) if f < 0 and round(abs(f), digits) != 0 else s


def count(v: Any) -> str:
    """An integer count: '12,345'."""
    f = _finite(v)
    return MISSING if f is None else f"{f:,.0f}"


def tokens(v: Any) -> str:
    """A token count: '1,440 tokens'."""
    f = _finite(v)
    return MISSING if f is None else f"{f:,.0f} tokens".replace("-", "−")


def usd(v: Any, digits: int = 2) -> str:
    """Dollars: '$3.20', '$1,234'; infinite or missing → '—'."""
    f = _finite(v)
    if f is None:
        return MISSING
    s = f"${abs(f):,.{digits}f}"
    return ("−" + s) if f < 0 else s


def pct(fraction: Any, digits: int = 1) -> str:
    """A fraction shown as a percentage: 0.407 → '40.7%'."""
    f = _finite(fraction)
    return MISSING if f is None else f"{f * 100:.{digits}f}%"


def rate(v: Any, unit: str, digits: int = 0) -> str:
    """A rate with its unit: rate(20000, 'tokens/s') → '20,000 tokens/s' (never '2e+04')."""
    f = _finite(v)
    return MISSING if f is None else f"{f:,.{digits}f} {unit}"


def label(column: str) -> str:
    """The user-facing label for an internal column name (itself when it is already plain words)."""
    if column in LABELS:
        return LABELS[column]
    if _SNAKE.match(column):
        raise KeyError(f"no display label for column {column!r}: add it to planner.present.LABELS")
    return column


def display_frame(df: pd.DataFrame, formats: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """A copy of `df` ready for st.dataframe: values formatted per column, missing → '—', columns labelled.

    formats: column → function(value) → str (e.g. {"ttft_p95_ms": ms}); columns without one keep their values,
    with missing cells shown as '—'.
    """
    out = df.copy()
    for col in out.columns:
        fn = (formats or {}).get(col)
        if fn is not None:
            out[col] = [fn(v) for v in out[col]]
        elif out[col].dtype == object or out[col].isna().any():
            out[col] = [MISSING if is_missing(v) else v for v in out[col]]
    return out.rename(columns={c: label(str(c)) for c in out.columns})
