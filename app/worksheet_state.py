"""The worksheet's state in this browser session, behind small accessors (one typed state for every page).

The worksheet (figures with provenance, interaction types and targets, name) lives in session state under the
`ws_*` keys, never in widget keys (Streamlit drops a widget's value when its page is not drawn), so it survives
leaving the page. It is seeded once per session from the URL (`ensure`), and the Worksheet page writes it back to
the address bar after every run (`sync_url`), provenance included (planner/worksheet/url.py is the contract): a
reload, a bookmark or a shared link reproduces the same inputs and where each came from.

Other pages read it with `get()` (the Prefill tab, What-if) or `current()` (None until the Worksheet page ran), and
hand figures over with `hand_over({field: figure})` (offer them, open the Worksheet page); the Worksheet page applies
them with `take()`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from planner.worksheet.budget import Worksheet
from planner.worksheet.interactions import Interaction, interactions
from planner.worksheet.provenance import Figure
from planner.worksheet.url import query_dict, worksheet_from_query

__all__ = [
    "BUILTIN",
    "FIELDS",
    "current",
    "ensure",
    "get",
    "hand_over",
    "interaction_types",
    "offer",
    "put",
    "sync_url",
    "take",
]

_KEY = "worksheet_figures"  # figures offered by other pages, not yet applied
_URL = "_ws_url_written"  # the query the Worksheet page last wrote

# Worksheet fields a page may fill, with the unit each expects.
FIELDS = {
    "queue_ms": "ms",
    "cold_ms": "ms",
    "network_ms": "ms",
    "prefill_tokens_per_s": "tokens/s",
    "prompt_tokens_p95": "tokens",
    "cache_hit_fraction": "fraction",
}
BUILTIN = frozenset(i.key for i in interactions())


def offer(field: str, figure: Figure) -> None:
    """Queue `figure` for the worksheet's `field`; raises KeyError/ValueError on a wrong field or unit."""
    if field not in FIELDS:
        raise KeyError(f"unknown worksheet field {field!r}; one of {', '.join(FIELDS)}")
    if figure.unit != FIELDS[field]:
        raise ValueError(f"{field} takes {FIELDS[field]}, got a figure in {figure.unit}")
    st.session_state.setdefault(_KEY, {})[field] = figure.to_dict()


def hand_over(figures: Mapping[str, Figure]) -> NoReturn:
    """Offer each of `figures` (field → Figure) and open the Worksheet page, which applies them.

    The switch replaces the address bar's query with an empty one instead of clearing it: `clear()` refuses while
    the page being left keeps widget values in the address bar (Capacity's `bind="query-params"` inputs), and an
    empty query keeps this session's worksheet (`ensure`).

    The page being left forgets its fragments first (`_forget_fragments`), so an auto-refresh tick of that page that
    is still on its way cannot blank the Worksheet page or take the browser back.
    """
    for field, figure in figures.items():
        offer(field, figure)
    _forget_fragments()
    st.switch_page("views/worksheet.py", query_params={})


def _forget_fragments() -> None:
    """Drop this session's fragments (the page being left's `st.fragment`s) before a switch to another page.

    Why (Streamlit 1.67): the browser keeps firing an auto-refreshing fragment's timer (Probes' `run_every` live view)
    until it has drawn the next page's first message. A tick sent in that window reaches the server with the old
    page's id and is accepted while the fragment is still stored (the store forgets it only when the new page's run
    ends): queued behind the switch, its run comes after the Worksheet's, and the browser then clears the page it
    just drew because that run names the old page (the main area stays blank, the sidebar drawn); one that lands
    before the switch's rerun starts becomes a full rerun of the old page instead. The switch's run registers none of
    these fragments, so forgetting them now changes nothing else, and the server ignores a rerun of a fragment it no
    longer holds (`AppSession.request_rerun`). tests/e2e/test_journey_compare.py fires the timer in that window.
    """
    ctx = get_script_run_ctx()
    if ctx is not None:
        ctx.fragment_storage.clear()


def take() -> dict[str, Figure]:
    """Pop every queued figure (field → Figure)."""
    pending = st.session_state.pop(_KEY, {}) or {}
    return {field: Figure.from_dict(d) for field, d in pending.items()}


def put(ws: Worksheet) -> None:
    """Make `ws` this session's worksheet."""
    ss = st.session_state
    ss.ws_figures = {f: getattr(ws, f).to_dict() for f in FIELDS}
    # built-in types first in their preset order, then the user's own (a saved worksheet's JSON comes back sorted)
    order = [i.key for i in interactions() if i.key in ws.targets_ms] + [k for k in ws.targets_ms if k not in BUILTIN]
    ss.ws_targets = {k: ws.targets_ms[k] for k in order}
    ss.ws_labels = dict(ws.target_labels)
    ss.ws_name = ws.name
    ss.ws_interaction = ws.interaction if ws.interaction in ws.targets_ms else next(iter(ws.targets_ms))


def ensure(query: Mapping[str, str] | None = None) -> bool:
    """Seed this session's worksheet from `query` (the URL's parameters) when the session has none yet, or when the
    URL is not the one the page last wrote (a link pasted into the tab, back/forward). True when it was (re)seeded.

    An empty query (arriving from another page, or a hand-off) keeps the session's worksheet.
    """
    query = dict(query or {})
    ss = st.session_state
    if "ws_figures" not in ss or (query and query != ss.get(_URL)):
        put(worksheet_from_query(query))
        return True
    return False


def current() -> Worksheet | None:
    """The worksheet of this session, or None until the Worksheet page has run (or a test seeded `ws_figures`)."""
    if "ws_figures" not in st.session_state:
        return None
    return get()


def get() -> Worksheet:
    """This session's worksheet (figures with provenance), the defaults until one was set."""
    ss = st.session_state
    if "ws_figures" not in ss:
        return Worksheet()
    base = Worksheet()
    figures: dict[str, Any] = {
        f: Figure.from_dict(ss.ws_figures[f]) if f in ss.ws_figures else getattr(base, f) for f in FIELDS
    }
    targets = dict(ss.get("ws_targets") or base.targets_ms)
    labels = {**base.target_labels, **dict(ss.get("ws_labels") or {})}
    # older sessions (and tests) keep the choice under the widget key only
    chosen = (ss.get("ws_interaction"), ss.get("interaction"))
    interaction = next((str(k) for k in chosen if k in targets), next(iter(targets)))
    return Worksheet(
        name=ss.get("ws_name", "Untitled"), interaction=interaction, targets_ms=targets, target_labels=labels, **figures
    )


def interaction_types(ws: Worksheet | None = None) -> list[Interaction]:
    """The worksheet's interaction types with *its* targets (custom ones included), in the worksheet's order."""
    ws = ws or get()
    helps = {i.key: i.help for i in interactions()}
    return [
        Interaction(key=k, label=ws.target_labels.get(k, k), target_p95_ms=float(t), help=helps.get(k, ""))
        for k, t in ws.targets_ms.items()
    ]


def sync_url(ws: Worksheet | None = None) -> None:
    """Write the worksheet (inputs and provenance) into the address bar."""
    query = query_dict(ws or get(), set(BUILTIN))
    st.session_state[_URL] = query
    st.query_params.from_dict(query)
