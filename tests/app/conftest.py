"""AppTest fixtures: every test gets its own temp data directory (a fresh, migrated SQLite store).

Where a typical AppTest test spends its time (profiled): each run of a page is 0.05–1 s of CPU (the script, its
queries, Plotly figures); a fresh AppTest also scanned every installed package for component manifests on its first
run (0.25 s of CPU, 1–2 s of wall time on a busy machine) until `new_app` shared one registry; seeding hundreds of
probe samples costs 1–2 s, so modules whose tests only read seed once (`store_snapshot`) and copy the file.
"""

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
import streamlit as st
from sqlalchemy.engine import Engine
from streamlit.components.v2.component_manager import BidiComponentManager
from streamlit.runtime.caching import cache_utils
from streamlit.testing.v1 import AppTest

from tests.support.router import ROUTER as ROUTER_FILE
from tests.support.store_template import migrated_sqlite, seed_data_dir

ROUTER = str(ROUTER_FILE)
# A hang guard, not a speed check: one run takes about a second, far longer with four suites on two cores.
RUN_TIMEOUT_S = 180
T = TypeVar("T")


@pytest.fixture(autouse=True)
def _temp_store(tmp_path, monkeypatch):
    monkeypatch.setenv("TTFT_PLANNER_DATA_DIR", str(seed_data_dir(tmp_path / "data")))
    monkeypatch.delenv("TTFT_PLANNER_DATABASE_URL", raising=False)
    # st.cache_data lives as long as the process, across AppTests, and a reader may leave the database out of its
    # key (Compare's `_compare(_eng, …)`: one server, one database): no test reads what an earlier one cached.
    st.cache_data.clear()


class CacheClock:
    """Streamlit's cache clock, stopped: a page's cached reader (st.cache_data(ttl=…)) expires only when a test moves
    `now` on, never because a loaded machine was slow between two runs."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def cache_clock(monkeypatch) -> CacheClock:
    """Stop the clock st.cache_data's TTLs read (cache_utils.TTLCACHE_TIMER, the seam Streamlit's own tests patch);
    the caches are dropped so that every one made from now on reads this clock."""
    clock = CacheClock()
    monkeypatch.setattr(cache_utils, "TTLCACHE_TIMER", clock)
    st.cache_data.clear()
    return clock


_components: BidiComponentManager | None = None


def new_app() -> AppTest:
    """A fresh AppTest of the whole app (router), not yet run: a new session with its own session state.

    Every AppTest shares one component registry, as every session of a real server shares its runtime's: AppTest
    otherwise builds one per instance, scanning every installed package for component manifests (it finds none here)
    on its first run. (A private attribute: if Streamlit renames it, each AppTest scans again, slower but correct.)
    """
    global _components
    if _components is None:
        _components = BidiComponentManager()
        _components.discover_and_register_components(start_file_watching=False)
    at = AppTest.from_file(ROUTER, default_timeout=RUN_TIMEOUT_S)
    at._bidi_component_manager = _components
    return at


@pytest.fixture
def app():
    """An AppTest of the whole app (router), not yet run."""
    return new_app()


def store_snapshot(folder: Path, seed: Callable[[Engine], T]) -> tuple[Path, T]:
    """A migrated SQLite store in `folder`, written by `seed` (which returns what the tests check against), with
    everything in its one file: seed once per module, then `use_store` gives each test its own copy."""
    from planner.store import open_store

    path = folder / "planner.db"
    engine = open_store(migrated_sqlite(path))
    try:
        value = seed(engine)
        with engine.connect() as conn:  # no -wal beside the file: a copy of planner.db alone is the whole store
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        engine.dispose()
    return path, value


def use_store(snapshot: Path) -> None:
    """Make a copy of `snapshot` (from `store_snapshot`) this test's store, before anything opened the test's own."""
    shutil.copyfile(snapshot, Path(os.environ["TTFT_PLANNER_DATA_DIR"]) / "planner.db")


def open_page(view: str, at: AppTest | None = None) -> AppTest:
    """The page `app/views/<view>.py` opened and run in `at`, after asserting it raised nothing. By default a fresh
    AppTest of the whole app that starts on that page, as a deep link does: its first run is the router on that page,
    with no run of the default page (the worksheet) before it."""
    if at is None:
        at = new_app()
    at.switch_page(f"views/{view}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def plotly_array(v) -> list:
    """A Plotly trace array as a list: Plotly 7 ships arrays as base64 {"dtype", "bdata"[, "shape"]}."""
    import base64

    import numpy as np

    if isinstance(v, dict) and "bdata" in v:
        a = np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"])
        if "shape" in v:
            a = a.reshape([int(x) for x in v["shape"].split(",")])
        return a.tolist()
    return list(v)


def chart_spec(at, key: str) -> dict:
    """The figure JSON of the plotly_chart whose element id contains `key`."""
    import json

    return json.loads(next(c for c in at.get("plotly_chart") if c.proto.id and key in c.proto.id).proto.spec)


def shown_table(at: AppTest, index: int = 0):
    """The static table `index` (ttft_planner_app.widgets.wrapped_table) as its reader sees it: the page escapes
    Markdown in every cell and header (st.table renders it) and lets long runs break with zero-width spaces; the
    browser shows neither."""
    import re

    plain = lambda v: re.sub(r"\\(.)", r"\1", v).replace("\u200b", "") if isinstance(v, str) else v
    return at.table[index].value.map(plain).rename(columns=plain)


def table_with(at: AppTest, column: str):
    """The static table (as shown_table gives it) that has a column named `column`."""
    tables = [shown_table(at, i) for i in range(len(at.table))]
    found = [t for t in tables if column in t.columns]
    assert found, f"no table has a column {column!r}: {[list(t.columns) for t in tables]}"
    return found[0]
