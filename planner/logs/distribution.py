"""The prompt-token distribution the Logs page draws: a histogram and an empirical CDF of every request's value.

Chart data, not summary figures (planner.logs.summary_sql.summarize gives those): pure numpy over one column.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["ecdf_points", "histogram"]


def histogram(values: Any, bins: int = 40) -> pd.DataFrame:
    """Histogram with equal-width bins: columns left, right, count (NaN dropped)."""
    arr = np.asarray(values, dtype=np.float64)
    arr = arr[~np.isnan(arr)]
    if arr.size == 0:
        return pd.DataFrame({"left": [], "right": [], "count": []})
    counts, edges = np.histogram(arr, bins=bins)
    return pd.DataFrame({"left": edges[:-1], "right": edges[1:], "count": counts})


def ecdf_points(values: Any, max_points: int = 2000) -> pd.DataFrame:
    """Empirical CDF as columns value, fraction (i/n), thinned to at most max_points steps for plotting."""
    arr = np.sort(np.asarray(values, dtype=np.float64))
    arr = arr[~np.isnan(arr)]
    n = arr.size
    if n == 0:
        return pd.DataFrame({"value": [], "fraction": []})
    idx = np.unique(np.linspace(0, n - 1, min(n, max_points)).round().astype(int))
    return pd.DataFrame({"value": arr[idx], "fraction": (idx + 1) / n})
