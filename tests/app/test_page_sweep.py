"""The page sweep (issue 12): every page of the router × every store state renders with no exception, shows its
title, and shows no "nan", "None", "NaT" and no snake_case column header — what a user reads, collected from every
element on the page.

One test per store state: the state is seeded once and one AppTest walks every page in the sidebar's order, as a
user clicking through would; every page's findings are collected and reported together, each naming its page and
the state, so one broken page never hides another.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from planner.store import open_store
from tests.app.conftest import ROUTER, new_app
from tests.support.router import router_pages
from tests.support.store_states import STATES, seed_state

PAGES = [url for _file, _title, _icon, url in router_pages()]
TITLES = {url: title for _file, title, _icon, url in router_pages()}
BAD_WORD = re.compile(r"(?<![\w.])(nan|NaN|None|NaT)(?![\w])")
SNAKE = re.compile(r"^[a-z0-9]+(_[a-z0-9]+)+$")


def _texts(node, out: list[str]) -> None:
    """Every string a user reads on an element: values, labels, bodies, help is left out (a tooltip)."""
    for attr in ("value", "label", "body"):
        try:
            v = getattr(node, attr, None)
        except Exception:  # noqa: BLE001 — some element types raise for attributes they lack
            v = None
        if isinstance(v, str):
            out.append(v)
    children = getattr(node, "children", None)
    if isinstance(children, dict):
        for child in children.values():
            _texts(child, out)


def _headers(df_element) -> list[str]:
    """The column headers a user reads: the column_config label where one is set, only the shown columns."""
    df = df_element.value
    proto = df_element.proto
    try:
        config = json.loads(proto.columns) if proto.columns else {}
    except (AttributeError, ValueError):
        config = {}
    order = list(getattr(proto, "column_order", []) or [])
    cols = [str(c) for c in df.columns]
    shown = [c for c in cols if c in order] if order else cols
    out = []
    for c in shown:
        cfg = config.get(c) or config.get(f"_pos:{cols.index(c)}") or {}
        if cfg.get("hidden"):
            continue
        out.append(cfg.get("label") or c)
    return out


def _cells(df_element) -> list[str]:
    """Every cell as the browser shows it: text as it is, and in a read-only table a missing value as the grid draws
    it ("None"; an editable grid leaves the cell empty to type into)."""
    df = df_element.value
    editable = getattr(df_element.proto, "editing_mode", 0) != 0  # Arrow.EditingMode.READ_ONLY is 0
    cells = df.astype(object).to_numpy().ravel().tolist()
    return [v if isinstance(v, str) else "None" for v in cells if isinstance(v, str) or (not editable and _missing(v))]


def _missing(v) -> bool:
    """None, NaN or NaT (numbers and dates are drawn as such)."""
    return v is None or bool(pd.isna(v))


def _findings(at: AppTest) -> list[str]:
    """What is wrong on the page `at` shows now: an exception, no title, nan/None/NaT, a snake_case header."""
    if at.exception:
        return [f"exception: {[e.value for e in at.exception]}"]
    found = []
    if not [t for t in at.title if t.value]:
        found.append("no title")
    texts: list[str] = []
    _texts(at.main, texts)
    for df in at.dataframe:
        texts.extend(_cells(df))
        snake = [h for h in _headers(df) if SNAKE.match(h)]
        if snake:
            found.append(f"snake_case column header(s): {snake}")
    for t in at.table:
        texts.extend(_cells(t))  # a static table draws a missing value as its text too
        snake = [str(c) for c in t.value.columns if SNAKE.match(str(c))]
        if snake:
            found.append(f"snake_case column header(s) in a table: {snake}")
    for m in at.metric:
        texts.extend([m.label, m.value])
    bad = sorted({t for t in texts if BAD_WORD.search(t)})
    if bad:
        found.append(f"shows nan/None/NaT: {bad[:5]}")
    return found


def test_the_sweep_walks_every_page_of_the_router():
    """The sweep follows the router, and the router has every view: a page added to app/views/ is swept."""
    views = {p.name for p in (Path(ROUTER).parent / "views").glob("*.py") if p.name != "__init__.py"}
    assert {file for file, _title, _icon, _url in router_pages()} == views
    assert PAGES[0] == "worksheet" and len(PAGES) == len(set(PAGES))


@pytest.mark.parametrize("state", STATES, ids=lambda s: s.replace(" ", "_").replace(",", ""))
def test_every_page_renders_cleanly(state):
    eng = open_store()
    seed_state(eng, state)
    eng.dispose()
    at = new_app()
    problems = []
    for page in PAGES:
        at.switch_page(f"views/{page}.py").run()
        problems += [f"{page} page ({TITLES[page]}), store state “{state}”: {f}" for f in _findings(at)]
    assert not problems, "\n".join(problems)
