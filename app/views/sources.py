"""Sources: our own production traffic, read where it already lives (the LiteLLM proxy's PostgreSQL) and kept here.

A source names the environment variable holding its database URL: the URL is read from the server's environment at
each Test and sync, and is never stored or shown (a message from the database has every URL in it replaced by the
variable's name). Sync now reads the requests since the last one read (planner.sources.sync: read-only on the
proxy's database, restart-safe) and the Logs page then opens a source like a stored upload.

The Prometheus section reads the engines' own TTFT and queue-time histograms per hour (planner.sources.prometheus,
on Read, kept in the session) and hands the worksheet's queueing segment the largest queue p95 among the hours with
at least 20 requests.
"""

import pandas as pd
import streamlit as st

from planner.inputs.env_names import shown_env_name
from planner.inputs.untrusted import md_text
from planner.sources import actions
from planner.sources.registry import (
    SourceInfo,
    SourceKind,
    SourceNotFound,
    list_sources,
    production_hours,
    read_up_to_ms,
    remove_source,
)
from ttft_planner_app import viewer
from ttft_planner_app.auth import can, record, require
from ttft_planner_app.cache import engine, store_url
from ttft_planner_app.store_errors import STORE_FAILURES, show_store_failure
from ttft_planner_app.views.logs_tabs.source import LINK, link_value
from ttft_planner_app.views.sources_sections.add import show_add_form
from ttft_planner_app.views.sources_sections.common import KINDS, is_set
from ttft_planner_app.views.sources_sections.hours import show_hours
from ttft_planner_app.views.sources_sections.prometheus_read import show_prometheus_read
from ttft_planner_app.widgets import wrapped_table

# One click reads at most this many pages of SYNC_PAGE_ROWS (the page waits for it); the next click goes on from
# there, and `ttft-planner sources sync` reads without a limit.
SYNC_PAGE_ROWS = 5_000
SYNC_MAX_PAGES = 40
HOURS_SHOWN = 24  # a source's card shows its hours with requests among the last this many up to its newest

st.title("Sources")
st.caption(
    "Your own production traffic, read where it already lives, read-only: the LiteLLM proxy's PostgreSQL (its "
    "LiteLLM_SpendLogs table), the engines' TTFT histograms in Prometheus (vLLM, SGLang, TGI), or OpenTelemetry GenAI "
    "spans and metrics your services export to the worker's receiver. Only requests' times, token counts and "
    "first-token times are kept (never prompts or replies); the Logs page then shows a source like a stored upload."
)
eng = engine()
ss = st.session_state
tz = viewer.time_zone()
# What the last action did, shown after the rerun that refreshed the table (the Endpoints page's pattern).
flash_slot = st.empty()
flash = ss.pop("sources_flash", None)
if flash:
    with flash_slot.container():
        getattr(st, flash[0])(flash[1])


def _when(ms: int | None, never: str = "—") -> str:
    return never if ms is None else viewer.fmt_ms(ms, tz)


def _test(src: SourceInfo) -> actions.Outcome:
    """Connect read-only and say what the proxy's table (or Prometheus) holds."""
    with st.spinner(f"Testing {md_text(src.name)}…"):
        return actions.test_source(eng, src, when=_when)


def _sync(src: SourceInfo) -> actions.Outcome:
    """Read the source's new requests (or hours) into the store: at most SYNC_MAX_PAGES pages per click."""
    with st.spinner(
        f"Reading {md_text(src.name)}'s new {'hours' if src.kind is SourceKind.PROMETHEUS else 'requests'}…"
    ):
        got = actions.sync_now(eng, src, when=_when, page_rows=SYNC_PAGE_ROWS, max_pages=SYNC_MAX_PAGES)
    if got.ok:
        record("source.sync", src.name, f"synced source: {got.first}")
    return got


def _show(src: SourceInfo, result: actions.Outcome) -> None:
    """Draw what the last Test or Sync now of `src` found (outside text made inert)."""
    if result.figures:
        cols = st.columns(len(result.figures))
        for col, (label, value) in zip(cols, result.figures, strict=True):
            col.metric(label, value)
    for line in result.lines:
        getattr(st, line.level)(md_text(line.text))
    link = link_value(("source", src.id))  # how the Logs page's address names this source
    if result.figures and link and src.kind.per_request:
        st.page_link(
            "views/logs.py", label="Open it on the Logs page", icon=":material/receipt_long:", query_params={LINK: link}
        )


def _url_from(src: SourceInfo) -> str:
    """Where the source's URL (or token) comes from, for the table: the variable's name, never its value."""
    if src.kind is SourceKind.OTLP:  # the receiver reads the token where it runs (the worker, `sources receive`)
        return f"{shown_env_name(src.secret_ref)} (read by the receiver)"
    var = shown_env_name(src.secret_ref) + ("" if is_set(src.secret_ref) else " (not set on this server)")
    if src.kind is SourceKind.PROMETHEUS:
        return (src.url or "") + (f", token from {var}" if src.secret_ref else "")
    return var


@st.cache_data(ttl=300, show_spinner=False)
def _stored_hours(url: str, source_id: int, state: tuple) -> list:
    """production_hours, read again only when the source's stored state (`state`: requests kept, last sync, watermark;
    every sync, receiver batch and metric export moves it) or the database changes: a rerun of the page (any click)
    does not re-read a large source's 24 hours of requests."""
    return production_hours(engine(), source_id, HOURS_SHOWN)


def _hours_of(src: SourceInfo) -> None:
    """The source's production TTFT per hour, as stored: the HOURS_SHOWN hours up to its newest request."""
    hours = _stored_hours(store_url(), src.id, (src.n_requests, src.synced_at_ms, src.watermark_ms))
    if not hours:
        how = {
            SourceKind.LITELLM: "Sync now reads them",
            SourceKind.PROMETHEUS: "Sync now reads its hours",
            SourceKind.OTLP: "they arrive with the spans",
        }[src.kind]
        st.caption(f"No production requests stored yet: {how}.")
        return
    newest = _when(max(h.hour_start_ms for h in hours))
    n = len(hours)
    label = f"Production TTFT per hour: {n:,} hour{'' if n == 1 else 's'} with requests, up to {newest}"
    with st.expander(label, expanded=True):
        where = actions.where(src) if src.kind is SourceKind.PROMETHEUS else f"{src.kind.origin} ({src.name})"
        show_hours(hours, where=where, key=f"sources_use_{src.id}", engine_figures=src.kind is SourceKind.PROMETHEUS)
        st.caption(
            md_text(
                f"The {HOURS_SHOWN} hours up to the newest request stored for {src.name}: "
                + (
                    "from the engines' histograms, exact to their buckets."
                    if src.kind is SourceKind.PROMETHEUS
                    else "first token − start per request, nearest rank, over the requests with a first-token time."
                )
            )
        )


sources = list_sources(eng)
if sources:
    table = pd.DataFrame(
        [
            {
                "Name": s.name,
                "Kind": KINDS.get(s.kind, str(s.kind)),
                "URL from": _url_from(s),
                "Requests kept": f"{s.n_requests:,}",
                "Read up to": _when(read_up_to_ms(eng, s)),
                "Last synced": _when(s.synced_at_ms, "never"),
                "Last error": actions.clean(s.last_error, s) if s.last_error else "—",
            }
            for s in sources
        ]
    )
    wrapped_table(table)
else:
    st.info("No sources yet. Add the LiteLLM proxy's database below.")

results = ss.setdefault("sources_results", {})
for s in sources:
    with st.container(border=True, key=f"sources_card_{s.id}"):  # .st-key-sources_card_<id> in the page
        pulled = s.kind.pulled  # an OTLP source is pushed to the receiver: nothing to test or sync
        if s.kind is SourceKind.PROMETHEUS:
            token = f" · bearer token from {md_text(shown_env_name(s.secret_ref))}" if s.secret_ref else ""
            st.markdown(f"**{md_text(s.name)}** · {md_text(actions.where(s))}{token}")
        else:
            secret = "URL" if pulled else "bearer token"
            st.markdown(
                f"**{md_text(s.name)}** · {KINDS.get(s.kind, str(s.kind))} · {secret} from "
                f"{md_text(shown_env_name(s.secret_ref))}"
            )
        if not pulled:
            st.caption(  # the source's name is outside text: md_text sets a URL in it as code, never a link
                "Spans and the TTFT metric arrive (OTLP/HTTP) at the worker's receiver (`ttft-planner serve "
                f"--otlp-port 4318`) or at {md_text(f'ttft-planner sources receive {s.name}')}."
            )
        b = st.columns([1, 1, 1, 3])
        may_pull = pulled and can("source.sync")
        if b[0].button("Test", key=f"sources_test_{s.id}", icon=":material/lan:", disabled=not may_pull) and require(
            "source.sync"
        ):
            results[s.id] = _test(s)
        if b[1].button(
            "Sync now",
            key=f"sources_sync_{s.id}",
            icon=":material/sync:",
            disabled=not pulled or not can("source.sync"),
        ) and require("source.sync"):
            try:
                results[s.id] = _sync(s)
            except STORE_FAILURES as exc:
                show_store_failure(exc)
            else:
                st.rerun()  # the table above shows the new count, watermark, sync time or error
        kept = (
            f"its {s.n_requests:,} stored requests"
            if s.kind.per_request
            else f"its stored hours ({s.n_requests:,} requests)"
        )
        untouched = {
            SourceKind.LITELLM: "the proxy's database is not touched",
            SourceKind.PROMETHEUS: "Prometheus is not touched",
            SourceKind.OTLP: "the exporters are not touched",
        }[s.kind]
        sure = b[3].checkbox(
            f"Yes, remove {md_text(s.name)} and {kept}",
            key=f"sources_sure_{s.id}",
            help=f"{untouched[:1].upper()}{untouched[1:]}.",
        )
        if b[2].button(
            "Remove", key=f"sources_remove_{s.id}", icon=":material/delete:", disabled=not can("source.write")
        ) and require("source.write"):
            if not sure:
                st.warning(f"Tick “Yes, remove {md_text(s.name)} …” first: removing cannot be undone.")
            else:
                try:
                    remove_source(eng, s.name)
                    record("source.write", s.name, f"removed source with its {s.n_requests:,} requests")
                except SourceNotFound:
                    pass  # removed meanwhile (another tab): the table below no longer lists it either way
                except STORE_FAILURES as exc:
                    show_store_failure(exc)
                else:
                    results.pop(s.id, None)
                    ss.sources_flash = (
                        "success",
                        f"Removed {md_text(s.name)} and {kept} ({untouched}).",
                    )
                    st.rerun()
        if s.id in results:
            _show(s, results.pop(s.id))  # once: a later run of the page shows the table's state, not an old answer
        _hours_of(s)

show_add_form(eng, expanded=not sources)
show_prometheus_read()
