"""Everything an AppTest page sent to the browser, as one text: what a test searches for a value that must never be
shown (a password, a key), wherever the page put it — a message, a label, a widget's value, a table's cells."""

from __future__ import annotations

import pandas as pd
from streamlit.testing.v1 import AppTest

__all__ = ["every_text"]


def every_text(at: AppTest) -> str:
    """Every element's and block's message (labels, bodies, help, options, widget values, table bytes) and every
    table's cells, joined by line breaks."""
    out: list[str] = []

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None:
            out.append(str(proto))
        try:
            value = getattr(node, "value", None)
        except Exception:  # noqa: BLE001 — some element types raise for attributes they lack
            value = None
        if isinstance(value, pd.DataFrame):
            out.append(value.to_string())
        elif isinstance(value, str):
            out.append(value)
        for child in (getattr(node, "children", None) or {}).values():
            walk(child)

    walk(at._tree)
    return "\n".join(out)
