"""Plotly figure builders: pure functions (data → go.Figure), one module per page.

Colours come from the Streamlit theme (app/.streamlit/config.toml), not from here,
except where a colour carries meaning (a verdict), which uses SEMANTIC.
"""

SEMANTIC = {"ok": "#2e7d32", "warn": "#ed6c02", "error": "#c62828", "muted": "#9e9e9e"}
