"""The Sources page's Prometheus section: production TTFT per hour read from Prometheus without storing a source
(planner.sources.prometheus, on Read, kept in the session and bound to the address bar), drawn as a stored source's
hours are, with the queue-p95 hand-off to the worksheet."""

from __future__ import annotations

import dataclasses
import time

import httpx
import streamlit as st

from planner.inputs.untrusted import md_text
from planner.inputs.urls import mask_url_password
from planner.inputs.validate import PROMETHEUS_HOURS
from planner.sources.prometheus import HOUR_MS, HourTtft, PrometheusError, ttft_by_hour
from planner.team.roles import ACTIONS
from ttft_planner_app.auth import can, require
from ttft_planner_app.views.sources_sections.common import PROM_PROFILES, host
from ttft_planner_app.views.sources_sections.hours import show_hours
from ttft_planner_app.widgets import number_input_for

__all__ = ["show_prometheus_read"]

ss = st.session_state


def _prom_read(url: str, profile: str, model: str | None, hours: int) -> dict:
    """Read the last `hours` hours from Prometheus at `url`: {"hours": [HourTtft as dict], …} or {"error": sentence}
    (one sentence, with any password the URL carries masked)."""
    kept = {"url": url, "profile": profile, "model": model}
    if not url.startswith(("http://", "https://")):
        return kept | {"error": "Give Prometheus' URL with its scheme, such as http://prometheus:9090."}
    now_ms = int(time.time() * 1000)
    try:
        with st.spinner(f"Reading {hours:,} hours from Prometheus at {md_text(host(url))}…"):
            got = ttft_by_hour(url, now_ms - hours * HOUR_MS, now_ms, profile=profile, model=model)
    except (PrometheusError, httpx.InvalidURL, ValueError) as exc:
        text = " ".join(str(exc).split()).rstrip(".")
        if not isinstance(exc, PrometheusError):
            text = f"{url} is not a URL Prometheus can be read at ({text})"
        said = mask_url_password(text, url)  # a reader's error names the server itself ("Prometheus at …")
        return kept | {"error": (said if said.startswith("Prometheus at ") else "Prometheus: " + said) + "."}
    return kept | {"hours": [dataclasses.asdict(h) for h in got], "read_at_ms": now_ms}


def _prom_show(got: dict) -> None:
    """Draw what the last Read found (planner.sources.prometheus's hours), or its error."""
    if got.get("error"):
        st.error(md_text(got["error"]))
        return
    where = f"Prometheus {host(got['url'])}, {got['profile']}, model {got['model'] or 'every model'}"
    show_hours(
        [HourTtft(**d) for d in got["hours"]],
        where=where,
        key="sources_prom_use",
        engine_figures=True,
        no_queue_why=f"the {PROM_PROFILES.get(got['profile'], got['profile'])} profile has no queue-time histogram "
        "read here",
    )
    st.caption(
        md_text(
            f"{where}: TTFT and queue time (arrival to a slot) from the engine's histograms, exact to their buckets; "
            "mean waiting is the engine's queued-requests gauge over the hour."
        )
    )


def show_prometheus_read() -> None:
    """The section: its inputs, Read, and what the last Read found."""
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
        # the profiles as the CLI's --profile names them (and the address bar: ?sources_prom_profile=sglang)
        prom_profile = pc[1].selectbox(
            "Profile",
            list(PROM_PROFILES),
            key="sources_prom_profile",
            persist_state="session",
            bind="query-params",
            help="Which engine's metric names to read: vLLM's vllm:…, SGLang's sglang:…, or TGI's tgi_… (its queue "
            "time only: TGI has no first-token histogram).",
        )
        prom_model = pc[2].text_input(
            "Model (optional)",
            key="sources_prom_model",
            placeholder="every model",
            persist_state="session",
            bind="query-params",
            help="The engine's model_name label; empty reads every model together.",
        )
        prom_hours = number_input_for(
            PROMETHEUS_HOURS, "Hours to read", value=24, step=1, key="sources_prom_hours", where=pc[3], persist=True
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
