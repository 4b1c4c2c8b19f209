"""Widgets more than one page draws the same way.

`number_input_for`: a number input whose range is a planner.inputs.validate Rule, the one its command's option and the
library's check also follow (the page never states a bound of its own); `persist=True` keeps it as persisted_number
does.

`persisted_number`: a number input that keeps its value for the session (leaving the page and coming back) and binds
it to the URL's query parameter named by its key, so a shared link carries it. The key is that parameter's name:
renaming one breaks the links people already shared.

`persisted_preset`: a select box over a catalogue of presets (keyed, each with a `.label`), kept and bound the same
way; it returns the picked key.

`wrapped_table`: a small table read whole — its cells wrap to the page's width, so every column is in view without a
sideways scroll (st.dataframe's grid sizes columns to their content and cuts or scrolls the rest).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pandas as pd
import streamlit as st

from planner.inputs.untrusted import md_text
from planner.inputs.validate import Rule

__all__ = ["number_input_for", "persisted_number", "persisted_preset", "rule_bounds", "wrapped_table"]


def rule_bounds(rule: Rule) -> dict[str, Any]:
    """number_input's min_value and max_value for `rule`: its two ends, whole numbers for an integer rule. An open end
    (a timeout "greater than 0") is the widget's bound too: its own value is refused, in the rule's words, by the check
    behind the widget (planner.inputs.validate.Rule.check, the library's own)."""
    if rule.integer:
        return {"min_value": int(rule.lo), "max_value": int(rule.hi)}
    return {"min_value": float(rule.lo), "max_value": float(rule.hi)}


def number_input_for(
    rule: Rule, label: str, *, key: str, where: Any = None, persist: bool = False, **kwargs: Any
) -> Any:
    """A number input whose bounds are `rule`'s (rule_bounds): st.number_input, or with `persist` persisted_number (kept
    for the session, bound to the query parameter `key`). `value` and `step` are made the rule's kind of number
    (Streamlit refuses an int beside float bounds); kwargs are number_input's own (value, step, format, help, …) less
    min_value and max_value, which only the rule sets."""
    if "min_value" in kwargs or "max_value" in kwargs:
        raise TypeError("number_input_for takes its bounds from the rule: pass no min_value or max_value")
    kind = int if rule.integer else float
    for name in ("value", "step"):
        if isinstance(kwargs.get(name), (int, float)):  # not None (an empty box) nor "min"
            kwargs[name] = kind(kwargs[name])
    if persist:
        return persisted_number(label, key=key, where=where, **rule_bounds(rule), **kwargs)
    return (st if where is None else where).number_input(label, key=key, **rule_bounds(rule), **kwargs)


def persisted_number(label: str, *, key: str, where: Any = None, **kwargs: Any) -> Any:
    """st.number_input(label, key=key, **kwargs), kept for the session and bound to the query parameter `key`.

    `where`: the container to draw in (a column, say); None draws in the page. kwargs are number_input's own
    (min_value, max_value, value, step, format, help).
    """
    return (st if where is None else where).number_input(
        label, persist_state="session", bind="query-params", key=key, **kwargs
    )


def persisted_preset(label: str, presets: Mapping[str, Any], *, key: str, where: Any = None, **kwargs: Any) -> Any:
    """st.selectbox(label, list(presets), key=key, **kwargs), each option shown by its preset's `.label`, kept for
    the session and bound to the query parameter `key`; returns the picked key (of `presets`).

    `where`: the container to draw in (a column, say); None draws in the page. kwargs are selectbox's own (index,
    help).
    """
    return (st if where is None else where).selectbox(
        label,
        list(presets),
        format_func=lambda k: presets[k].label,
        persist_state="session",
        bind="query-params",
        key=key,
        **kwargs,
    )


def wrapped_table(frame: pd.DataFrame, css: pd.DataFrame | None = None) -> None:
    """Draw `frame` (already labelled and formatted) as a static table whose cells wrap, without its index.

    st.table renders Markdown in every cell and header, so each is made inert first (names are typed by users: an
    image link there would be fetched by every reader's browser). `css`: CSS per cell for some of `frame`'s columns
    (same index, columns a subset of `frame`'s), e.g. a verdict's background colour.
    """
    shown = frame.map(_cell).rename(columns=_cell)
    styler = shown.style.hide(axis="index")
    if css is not None:
        cell_css = css.rename(columns=md_text)
        styler = styler.apply(lambda col: list(cell_css[col.name]), subset=list(cell_css.columns))
    st.table(styler)


# A run without spaces longer than this (a URL in a name) gets break opportunities after its separators: a table cell
# wraps only at breaks, and Streamlit's cell styles keep a long word whole, pushing the table past the page.
_LONG_RUN_CHARS = 24
_LONG_RUN = re.compile(rf"\S{{{_LONG_RUN_CHARS + 1},}}")
_SEPARATOR = re.compile(r"([/.:?&=_-])")
_ZERO_WIDTH_SPACE = "\u200b"


def _cell(value: Any) -> str:
    """A cell's value as inert Markdown (md_text) that can wrap: long runs may break after / . : ? & = _ -."""
    return _LONG_RUN.sub(lambda m: _SEPARATOR.sub(r"\1" + _ZERO_WIDTH_SPACE, m.group()), md_text(value))
