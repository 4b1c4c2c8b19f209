"""Sources: our own production traffic, read where it already lives (the LiteLLM proxy's PostgreSQL) and kept here.

A source names the environment variable holding its database URL: the URL is read from the server's environment at
each Test and sync, and is never stored or shown (a message from the database has every URL in it replaced by the
variable's name). Sync now reads the requests since the last one read (planner.sources.sync: read-only on the
proxy's database, restart-safe) and the Logs page then opens a source like a stored upload.

The Prometheus section reads the engines' own TTFT and queue-time histograms per hour (planner.sources.prometheus,
on Read, kept in the session) and hands the worksheet's queueing segment the largest queue p95 among the hours with
at least 20 requests.
"""

import dataclasses
import os
import re
import time
from urllib.parse import unquote, urlsplit

import httpx
import pandas as pd
import streamlit as st
from sqlalchemy.exc import ArgumentError

from planner.auth import ACTIONS
from planner.provenance import Figure, Source
from planner.sources import litellm
from planner.sources.prometheus import (
    HOUR_MS,
    MIN_REQUESTS_FOR_P95,
    HourTtft,
    PrometheusError,
    busiest_hour,
    queue_hour_for_worksheet,
    ttft_by_hour,
)
from planner.sources.sync import sync_source
from planner.stats import summarize
from planner.store.sources import (
    SourceInfo,
    SourceKind,
    SourceNotFound,
    add_source,
    get_source,
    list_sources,
    remove_source,
    source_ttft_ms,
)
from planner.untrusted import mask_secret, md_text
from ttft_planner_app import viewer
from ttft_planner_app.auth import can, record, require
from ttft_planner_app.cache import engine
from ttft_planner_app.store_errors import STORE_FAILURES, show_store_failure
from ttft_planner_app.views.capacity_tabs._common import to_worksheet
from ttft_planner_app.views.logs_tabs.source import LINK, link_value
from ttft_planner_app.widgets import wrapped_table

# One click reads at most this many pages of SYNC_PAGE_ROWS (the page waits for it); the next click goes on from
# there, and `ttft-planner sources sync` reads without a limit.
SYNC_PAGE_ROWS = 5_000
SYNC_MAX_PAGES = 40
KINDS = {SourceKind.LITELLM: "LiteLLM proxy (PostgreSQL)", SourceKind.OTLP: "OpenTelemetry spans (OTLP receiver)"}
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,199}")
# Any URL a driver's message may carry (the source's own, or SQLAlchemy's redacted form): up to white space or a
# closing parenthesis, less a trailing colon that ends the clause ("postgresql+psycopg://u:***@h:5432/db: refused").
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s()]*?(?=:?(?:[\s)]|$))")

st.title("Sources")
st.caption(
    "Your own production traffic, read where it already lives: the LiteLLM proxy's PostgreSQL (its "
    "LiteLLM_SpendLogs table), read-only. Sync now copies the requests' times, token counts and first-token times "
    "(never prompts or replies) into this dashboard's store; the Logs page then shows them like a stored upload."
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


def _is_set(var: str) -> bool:
    return bool(os.environ.get(var))


def _clean(message: str, src: SourceInfo) -> str:
    """A message from the source's database with no URL and no password in it: every URL (the source's own, or its
    redacted form) becomes "the database in $VAR"."""
    text = _URL.sub(f"the database in ${src.secret_ref}", message)
    dsn = os.environ.get(src.secret_ref, "")
    try:
        password = urlsplit(dsn).password or ""
    except ValueError:
        password = ""
    for secret in (dsn, password, unquote(password)):
        text = mask_secret(text, secret) if secret else text
    return text.rstrip(".")


def _problem(src: SourceInfo) -> str | None:
    """Why the source's variable cannot be used as it is (unset, or not a PostgreSQL URL), without showing it."""
    dsn = os.environ.get(src.secret_ref, "")
    if not dsn:
        return _unset(src.secret_ref)
    if not dsn.startswith(("postgresql://", "postgresql+psycopg://")):  # what litellm.connect takes
        return f"${src.secret_ref} does not hold a PostgreSQL URL: it should be postgresql://user:password@host/db."
    return None


def _unset(var: str) -> str:
    return (
        f"${var} is not set on the dashboard's server: set it there to the LiteLLM proxy's PostgreSQL URL "
        "(postgresql://user:password@host/db; a read-only role is enough) and restart the dashboard."
    )


def _not_a_url(src: SourceInfo, exc: Exception) -> str:
    return f"${src.secret_ref} does not hold a PostgreSQL URL that can be opened ({type(exc).__name__})."


def _when(ms: int | None, never: str = "—") -> str:
    return never if ms is None else viewer.fmt_ms(ms, tz)


def _test(src: SourceInfo) -> list[tuple[str, str]]:
    """Connect read-only and say what the proxy's table holds: [(level, text)]."""
    if problem := _problem(src):
        return [("error", problem)]
    try:
        reader = litellm.connect(os.environ[src.secret_ref])
        try:
            got = litellm.describe(reader)
        finally:
            reader.dispose()
    except litellm.LiteLLMError as exc:
        return [("error", f"{src.name}: {_clean(str(exc), src)}.")]
    except (ArgumentError, ValueError) as exc:
        return [("error", f"{src.name}: {_not_a_url(src, exc)}")]
    if not got["rows"]:
        return [("success", f"{src.name}: connected; {litellm.TABLE} holds no requests yet.")]
    return [
        (
            "success",
            f"{src.name}: {litellm.TABLE} holds {got['rows']:,} requests, first {_when(got['first_ms'])}, "
            f"last {_when(got['last_ms'])}.",
        )
    ]


def _sync(src: SourceInfo) -> dict:
    """Read the source's new requests into the store; what to show: {"lines": [(level, text)], "metrics": […]}."""
    if problem := _problem(src):
        return {"lines": [("error", problem)]}
    try:
        with st.spinner(f"Reading {md_text(src.name)}'s new requests…"):
            rep = sync_source(eng, src, page_rows=SYNC_PAGE_ROWS, max_pages=SYNC_MAX_PAGES)
    except litellm.LiteLLMError as exc:
        why = _clean(str(exc), src)
        return {"lines": [("error", f"{src.name}: {why}; what was read before it is kept, the next sync goes on.")]}
    except (ArgumentError, ValueError) as exc:
        return {"lines": [("error", f"{src.name}: {_not_a_url(src, exc)}")]}
    record("source.sync", src.name, f"synced source: {rep.new:,} new requests")
    kept = get_source(eng, src.name).n_requests
    ttft = summarize(source_ttft_ms(eng, src.id))
    p50, p95 = ttft["p50"], ttft["p95"]
    lines = [
        (
            "success",
            f"{src.name}: read {rep.read:,} requests in {rep.pages:,} page{'' if rep.pages == 1 else 's'}, "
            f"{rep.new:,} new, {len(rep.left_out):,} left out; {kept:,} kept.",
        )
    ]
    lines += [("warning", f"Left out {rid}: {why}.") for rid, why in rep.left_out[:5]]
    if rep.pages >= SYNC_MAX_PAGES:
        lines.append(
            (
                "info",
                f"Stopped after {rep.pages:,} pages of {SYNC_PAGE_ROWS:,}: press Sync now again for the rest, or run "
                f"ttft-planner sources sync {src.name}.",
            )
        )
    if p50.n:
        unreliable = "" if p95.reliable else " The p95 rests on fewer than 20 requests: it is only the largest value."
        note = (
            f"Production TTFT (first token − start, nearest rank) over the {p50.n:,} kept requests with a first-token "
            f"time.{unreliable}"
        )
    else:
        note = "No kept request has a first-token time (the proxy records one for streamed replies only)."
    lines.append(("caption", note))
    fmt = lambda pc: "—" if pc.value is None else f"{pc.value:,.0f} ms"  # noqa: E731
    metrics = [
        ("Read", f"{rep.read:,}"),
        ("New", f"{rep.new:,}"),
        ("Left out", f"{len(rep.left_out):,}"),
        ("Production TTFT p50", fmt(p50)),
        ("Production TTFT p95", fmt(p95)),
    ]
    return {"lines": lines, "metrics": metrics}


def _show(src: SourceInfo, result: dict) -> None:
    """Draw what the last Test or Sync now of `src` found (outside text made inert)."""
    if result.get("metrics"):
        cols = st.columns(len(result["metrics"]))
        for col, (label, value) in zip(cols, result["metrics"], strict=True):
            col.metric(label, value)
    for level, text in result["lines"]:
        getattr(st, level)(md_text(text))
    link = link_value(("source", src.id))  # how the Logs page's address names this source
    if result.get("metrics") and link:
        st.page_link(
            "views/logs.py", label="Open it on the Logs page", icon=":material/receipt_long:", query_params={LINK: link}
        )


sources = list_sources(eng)
if sources:
    table = pd.DataFrame(
        [
            {
                "Name": s.name,
                "Kind": KINDS.get(s.kind, str(s.kind)),
                "URL from": f"${s.secret_ref}" + ("" if _is_set(s.secret_ref) else " (not set on this server)"),
                "Requests kept": f"{s.n_requests:,}",
                "Read up to": _when(s.watermark_ms),
                "Last synced": _when(s.synced_at_ms, "never"),
                "Last error": _clean(s.last_error, s) if s.last_error else "—",
            }
            for s in sources
        ]
    )
    wrapped_table(table)
else:
    st.info("No sources yet. Add the LiteLLM proxy's database below.")

results = ss.setdefault("sources_results", {})
for s in sources:
    with st.container(border=True):
        pulled = s.kind is SourceKind.LITELLM  # an OTLP source is pushed to the receiver: nothing to test or sync
        secret = "URL" if pulled else "bearer token"
        st.markdown(
            f"**{md_text(s.name)}** · {KINDS.get(s.kind, str(s.kind))} · {secret} from {md_text('$' + s.secret_ref)}"
        )
        if not pulled:
            st.caption(f"Spans arrive through `ttft-planner sources receive {md_text(s.name)}` (OTLP/HTTP).")
        b = st.columns([1, 1, 1, 3])
        may_pull = pulled and can("source.sync")
        if b[0].button("Test", key=f"sources_test_{s.id}", icon=":material/lan:", disabled=not may_pull) and require(
            "source.sync"
        ):
            results[s.id] = {"lines": _test(s)}
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
        sure = b[3].checkbox(
            f"Yes, remove {md_text(s.name)} and its {s.n_requests:,} stored requests",
            key=f"sources_sure_{s.id}",
            help="The proxy's own database is not touched.",
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
                        f"Removed {md_text(s.name)} and its {s.n_requests:,} stored requests (the proxy's database "
                        "is not touched).",
                    )
                    st.rerun()
        if s.id in results:
            _show(s, results.pop(s.id))  # once: a later run of the page shows the table's state, not an old answer


def _reset_add_form() -> None:
    for k in ("sources_add_name", "sources_add_var"):
        ss.pop(k, None)


with st.expander("Add a source", expanded=not sources, icon=":material/add:"):
    kind_label = st.radio(  # by label: a kind's value ("litellm") is not for the page
        "Kind", [KINDS[SourceKind.LITELLM], KINDS[SourceKind.OTLP]], horizontal=True, key="sources_add_kind"
    )
    kind = next(k for k, label in KINDS.items() if label == kind_label)
    pulled_kind = kind is SourceKind.LITELLM
    with st.form("sources_add"):
        c = st.columns(2)
        name = c[0].text_input(
            "Name", key="sources_add_name", placeholder="prod-proxy" if pulled_kind else "agents", max_chars=120
        )
        var = c[1].text_input(
            "Environment variable holding its PostgreSQL URL"
            if pulled_kind
            else "Environment variable holding the bearer token its exporters send",
            key="sources_add_var",
            placeholder="LITELLM_DSN" if pulled_kind else "OTLP_TOKEN",
            help="The variable's name, not its value: e.g. LITELLM_DSN, set to postgresql://user:password@host/db."
            if pulled_kind
            else "The variable's name, not the token: e.g. OTLP_TOKEN, set in the receiver's environment.",
        )
        st.caption(
            "The URL is read from this variable in the dashboard server's environment at each Test and sync: it is "
            "never stored and never shown. A read-only role on the proxy's database is enough."
            if pulled_kind
            else "Spans arrive when `ttft-planner sources receive NAME` runs (OTLP/HTTP on port 4318 by default) with "
            "the token in that variable; point the SDKs' OTLP exporter at it with `Authorization: Bearer <token>`."
        )
        if st.form_submit_button("Add source", type="primary", disabled=not can("source.write")) and require(
            "source.write"
        ):
            var = var.strip()
            if not _VARIABLE.fullmatch(var):
                # never echoed: what was typed may be the URL itself, password and all; the box is emptied
                ss.pop("sources_add_var", None)
                ss.sources_flash = (
                    "error",
                    "Give the name of an environment variable (letters, digits and _, such as LITELLM_DSN), not the "
                    "URL itself (or the token): it stays in the server's environment.",
                )
                st.rerun()
            try:
                add_source(eng, name, kind, var)
                what = "URL" if pulled_kind else "token"
                record("source.write", name.strip(), f"added source: {kind.short}, {what} from ${var}")
            except ValueError as exc:
                st.error(md_text(str(exc)[:1].upper() + str(exc)[1:] + "."))
            except STORE_FAILURES as exc:
                show_store_failure(exc)
            else:
                then = (
                    "press Test to check the connection, then Sync now"
                    if pulled_kind
                    else f"run `ttft-planner sources receive {md_text(name.strip())}` where its exporters can reach it"
                )
                ss.sources_flash = (
                    "success",
                    f"Added {md_text(name.strip())}: {then}."
                    + ("" if not pulled_kind or _is_set(var) else f" {md_text(_unset(var))}"),
                )
                _reset_add_form()
                st.rerun()


# --- Prometheus: production TTFT per hour from the engines' own histograms (planner.sources.prometheus) ----------

PROM_PROFILES = {"vllm": "vLLM", "sglang": "SGLang"}
PROM_MAX_HOURS = 24 * 30
# A p95 of fewer requests is only the largest value: an hour needs this many to hand its queue p95 over.


def _host(url: str) -> str:
    """The URL's host[:port] (never a user or password it may carry), or the URL itself when it has none."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return url
    return (f"[{host}]" if ":" in host else host) + (f":{port}" if port else "") if host else url


def _prom_read(url: str, profile: str, model: str | None, hours: int) -> dict:
    """Read the last `hours` hours from Prometheus at `url`: {"hours": [HourTtft as dict], …} or {"error": sentence}
    (one sentence, with any password the URL carries masked)."""
    kept = {"url": url, "profile": profile, "model": model}
    if not url.startswith(("http://", "https://")):
        return kept | {"error": "Give Prometheus' URL with its scheme, such as http://prometheus:9090."}
    now_ms = int(time.time() * 1000)
    try:
        with st.spinner(f"Reading {hours:,} hours from Prometheus at {md_text(_host(url))}…"):
            got = ttft_by_hour(url, now_ms - hours * HOUR_MS, now_ms, profile=profile, model=model)
    except (PrometheusError, httpx.InvalidURL, ValueError) as exc:
        text = " ".join(str(exc).split()).rstrip(".")
        if not isinstance(exc, PrometheusError):
            text = f"{url} is not a URL Prometheus can be read at ({text})"
        try:
            password = urlsplit(url).password or ""
        except ValueError:
            password = ""
        for secret in (password, unquote(password)):
            text = mask_secret(text, secret) if secret else text
        return kept | {"error": "Prometheus: " + text + "."}
    return kept | {"hours": [dataclasses.asdict(h) for h in got], "read_at_ms": now_ms}


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f} ms"


def _prom_show(got: dict) -> None:
    """Draw what the last Read found: the hours with requests, the busiest hour's p95, the queue p95 hand-off."""
    if got.get("error"):
        st.error(md_text(got["error"]))
        return
    busy = [h for h in (HourTtft(**d) for d in got["hours"]) if h.requests > 0]
    model = got["model"] or "every model"
    where = f"{_host(got['url'])}, {got['profile']}, model {model}"
    if not busy:
        st.info(md_text(f"Prometheus at {where}: no requests in the {len(got['hours']):,} hours read."))
        return
    wrapped_table(
        pd.DataFrame(
            [
                {
                    "Hour": viewer.fmt_ms(h.hour_start_ms, tz),
                    "Requests": f"{h.requests:,.0f}",
                    "TTFT p50": _ms(h.p50_ms),
                    "TTFT p95": _ms(h.p95_ms),
                    "Queue p95": _ms(h.queue_p95_ms),
                    "Mean waiting": "—" if h.waiting_mean is None else f"{h.waiting_mean:,.1f}",
                }
                for h in busy
            ]
        )
    )
    top = busiest_hour(busy)
    assert top is not None  # busy holds an hour with requests
    st.markdown(
        md_text(
            f"Production TTFT p95, busiest hour ({viewer.fmt_ms(top.hour_start_ms, tz)}): {_ms(top.p95_ms)} "
            f"({top.requests:,.0f} requests)."
        )
    )
    st.caption(
        md_text(
            f"Prometheus at {where}: TTFT and queue time (arrival to a slot) from the engine's histograms, "
            "exact to their buckets; mean waiting is the engine's queued-requests gauge over the hour."
        )
    )
    pick = queue_hour_for_worksheet(busy)
    if (
        st.button(
            "Use queue p95 in the worksheet",
            key="sources_prom_use",
            icon=":material/input:",
            type="primary",
            disabled=pick is None,
        )
        and pick is not None
        and pick.queue_p95_ms is not None
    ):
        hour = viewer.fmt_ms(pick.hour_start_ms, tz)
        to_worksheet(
            "queue_ms",
            Figure(
                float(pick.queue_p95_ms),
                "ms",
                Source.LOG,
                detail=f"production queue-time p95 from Prometheus {where}, hour {hour}",
                n=int(pick.requests),
            ),
        )
    if pick is not None:
        st.caption(
            md_text(
                f"Hands the worksheet's queueing segment {_ms(pick.queue_p95_ms)}: the queue p95 of "
                f"{viewer.fmt_ms(pick.hour_start_ms, tz)} ({pick.requests:,.0f} requests), the largest among the "
                f"hours with at least {MIN_REQUESTS_FOR_P95} requests."
            )
        )
    elif all(h.queue_p95_ms is None for h in busy):
        st.caption(
            md_text(
                f"No queue p95 to hand over: the {PROM_PROFILES.get(got['profile'], got['profile'])} profile has no "
                "queue-time histogram read here."
            )
        )
    else:
        st.caption(
            md_text(
                f"No queue p95 to hand over: no hour has {MIN_REQUESTS_FOR_P95} requests or more, and the p95 of fewer "
                "is only the largest value."
            )
        )


st.subheader("Prometheus: production TTFT per hour")
st.caption(
    "The engines' own first-token and queue-time histograms, read from Prometheus' HTTP API: TTFT p50/p95 and the "
    "queue-time p95 (the worksheet's queueing segment) per hour, with the requests each rests on."
)
with st.container(border=True):
    pc = st.columns([3, 1, 2, 1])
    prom_url = pc[0].text_input(
        "Prometheus URL",
        key="sources_prom_url",
        placeholder="http://prometheus:9090",
        persist_state="session",
        bind="query-params",
    )
    prom_profile = pc[1].selectbox(
        "Profile",
        list(PROM_PROFILES),  # as the CLI's --profile names them (and the address bar: ?sources_prom_profile=sglang)
        key="sources_prom_profile",
        persist_state="session",
        bind="query-params",
        help="Which engine's metric names to read: vLLM's vllm:… or SGLang's sglang:….",
    )
    prom_model = pc[2].text_input(
        "Model (optional)",
        key="sources_prom_model",
        placeholder="every model",
        persist_state="session",
        bind="query-params",
        help="The engine's model_name label; empty reads every model together.",
    )
    prom_hours = pc[3].number_input(
        "Hours to read",
        min_value=1,
        max_value=PROM_MAX_HOURS,
        value=24,
        step=1,
        key="sources_prom_hours",
        persist_state="session",
        bind="query-params",
    )
    if st.button(
        "Read",
        key="sources_prom_read",
        icon=":material/query_stats:",
        disabled=not can("source.sync"),
    ) and require("source.sync"):
        ss.sources_prom = _prom_read(
            prom_url.strip(), prom_profile, (prom_model or "").strip() or None, int(prom_hours)
        )
    if not can("source.sync"):
        st.caption(f"Reading Prometheus needs the {ACTIONS['source.sync']} role (as Test and Sync now do).")
    if ss.get("sources_prom"):
        _prom_show(ss.sources_prom)
