"""Widgets more than one page draws the same way.

`persisted_number`: a number input that keeps its value for the session (leaving the page and coming back) and binds
it to the URL's query parameter named by its key, so a shared link carries it. The key is that parameter's name:
renaming one breaks the links people already shared.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

__all__ = ["persisted_number"]


def persisted_number(label: str, *, key: str, where: Any = None, **kwargs: Any) -> Any:
    """st.number_input(label, key=key, **kwargs), kept for the session and bound to the query parameter `key`.

    `where`: the container to draw in (a column, say); None draws in the page. kwargs are number_input's own
    (min_value, max_value, value, step, format, help).
    """
    return (st if where is None else where).number_input(
        label, persist_state="session", bind="query-params", key=key, **kwargs
    )
