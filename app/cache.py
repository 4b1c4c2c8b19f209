"""Caching at the edge: the one place the app holds shared resources."""

from __future__ import annotations

import streamlit as st
from sqlalchemy.engine import Engine

from planner.inputs.untrusted import md_text
from planner.store import StoreError, database_url, open_store, redacted
from planner.store.faults import describe

__all__ = ["engine", "store_url", "try_engine"]

#: The store's URL ($TTFT_PLANNER_DATABASE_URL, else the data directory's SQLite file): the key pages give their
#: cached readers, so another database is read again.
store_url = database_url


@st.cache_resource(show_spinner=False)
def _engine(url: str) -> Engine:
    return open_store(url)


def engine() -> Engine:
    """The store engine, opened (and migrated) once per server process.

    When the database cannot be opened, shows the reason on the page and stops the
    script: the page never renders half a view over a broken store.
    """
    url = database_url()
    try:
        return _engine(url)
    except StoreError as exc:
        st.error(
            md_text("T" + describe(exc, consequence="this page needs it")[1:] + "."), icon=":material/database_off:"
        )
        st.caption(f"Database URL in use: `{redacted(url)}`. Set TTFT_PLANNER_DATABASE_URL to change it.")
        st.stop()


def try_engine() -> tuple[Engine | None, str | None]:
    """(engine, None) when the store opens, else (None, the reason) — for pages that work without a database."""
    url = database_url()
    try:
        return _engine(url), None
    except StoreError as exc:
        return None, str(exc)
