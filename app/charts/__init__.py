"""Plotly figure builders: pure functions (data → go.Figure), one module per page.

Colours come from the Streamlit theme (app/.streamlit/config.toml), not from here,
except where a colour carries meaning (a verdict), which uses SEMANTIC, and where it names a side of a measurement
(SIDE_COLORS: the theme's first two chart colours, so "server" and "browser" look the same on every chart).
"""

import tomllib
from pathlib import Path

SEMANTIC = {"ok": "#2e7d32", "warn": "#ed6c02", "error": "#c62828", "muted": "#9e9e9e"}


def _theme_colors() -> list[str]:
    """The theme's chartCategoricalColors (app/.streamlit/config.toml, which the wheel carries beside the app)."""
    config = tomllib.loads((Path(__file__).resolve().parents[1] / ".streamlit" / "config.toml").read_text())
    return list(config["theme"]["chartCategoricalColors"])


#: One colour per side of an RTT measurement, on every chart that shows it (Regions: distribution, server vs
#: browser, history).
SIDE_COLORS = dict(zip(("server", "browser"), _theme_colors(), strict=False))
