"""The Sources page's "Add a source" form: a LiteLLM proxy or an OpenTelemetry receiver by the NAME of the variable
holding its URL or token, or a Prometheus by its URL (never with a password), profile and model."""

from __future__ import annotations

from typing import NoReturn

import streamlit as st
from sqlalchemy.engine import Engine

from planner.inputs.env_names import EnvNameError, check_env_name
from planner.inputs.untrusted import md_text
from planner.inputs.urls import UrlError, check_url
from planner.sources.registry import SourceKind, add_source
from ttft_planner_app.auth import can, record, require
from ttft_planner_app.store_errors import STORE_FAILURES, show_store_failure
from ttft_planner_app.views.sources_sections.common import KINDS, PROM_PROFILES, host, is_set, unset

__all__ = ["show_add_form"]

ss = st.session_state
PLACEHOLDER = {SourceKind.LITELLM: "prod-proxy", SourceKind.OTLP: "agents", SourceKind.PROMETHEUS: "engines"}


def _reset_add_form() -> None:
    for k in (
        "sources_add_name",
        "sources_add_var",
        "sources_add_url",
        "sources_add_model",
        "sources_add_metric",
        "sources_add_token",
    ):
        ss.pop(k, None)


def _submitted() -> bool:
    """The form's Add source, pressed by someone allowed to add sources."""
    return bool(
        st.form_submit_button("Add source", type="primary", disabled=not can("source.write"))
        and require("source.write")
    )


def _refuse(key: str, message: str) -> NoReturn:
    """Empty the box `key` (what was typed there may be a secret: never echoed), say why, and run the page again."""
    ss.pop(key, None)
    ss.sources_flash = ("error", message)
    st.rerun()


def _add_prometheus(eng: Engine, name: str) -> None:
    """The Prometheus fields of the add form, and the source they make on submit."""
    c = st.columns([3, 1, 2])
    url = c[0].text_input("Prometheus URL", key="sources_add_url", placeholder="http://prometheus:9090")
    profiles: list[str] = list(PROM_PROFILES)
    profile = c[1].selectbox(
        "Profile", profiles, key="sources_add_profile", format_func=lambda p: PROM_PROFILES[str(p)]
    )
    model = c[2].text_input("Model (optional)", key="sources_add_model", placeholder="every model")
    d = st.columns(2)
    metric = d[0].text_input(
        "TTFT histogram (optional)",
        key="sources_add_metric",
        placeholder="the profile's",
        help="Another engine's first-token histogram, without _bucket (e.g. my_engine_ttft_seconds): read instead of "
        "the profile's, with the profile's model label.",
    )
    token_var = d[1].text_input(
        "Environment variable holding a bearer token (optional)",
        key="sources_add_token",
        placeholder="PROMETHEUS_TOKEN",
        help="Only where Prometheus sits behind a proxy that wants one: the variable's name, not the token.",
    )
    st.caption(
        "The worker reads the hours on its own every period (and Sync now at once): a week back at first, then each "
        "hour as it fills. The URL is stored, so it must not carry a password: put a token in a variable instead."
    )
    if not _submitted():
        return
    try:
        token_var = check_env_name(token_var, "The bearer token's variable", optional=True)
    except EnvNameError as exc:
        _refuse("sources_add_token", md_text(f"{exc} (such as PROMETHEUS_TOKEN)."))
    try:
        checked = check_url(url, what="the Prometheus URL")
        add_source(
            eng,
            name,
            SourceKind.PROMETHEUS,
            token_var,
            url=checked,
            profile=profile,
            model_filter=model.strip() or None,
            metric=metric.strip() or None,
        )
        record("source.write", name.strip(), f"added source: Prometheus {host(checked)}")
    except UrlError as exc:
        ss.pop("sources_add_url", None)  # it may carry a password: never echoed, the box is emptied
        ss.sources_flash = ("error", md_text(f"{str(exc)[:1].upper()}{str(exc)[1:]}".rstrip(".") + "."))
        st.rerun()
    except ValueError as exc:
        st.error(md_text(str(exc)[:1].upper() + str(exc)[1:] + "."))
    except STORE_FAILURES as exc:
        show_store_failure(exc)
    else:
        ss.sources_flash = ("success", f"Added {md_text(name.strip())}: press Test to check it, then Sync now.")
        _reset_add_form()
        st.rerun()


def _add_pulled_or_pushed(eng: Engine, name: str, kind: SourceKind) -> None:
    """The LiteLLM and OpenTelemetry fields of the add form (a variable's name), and the source they make."""
    pulled_kind = kind is SourceKind.LITELLM
    var = st.text_input(
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
        else "Spans and the TTFT metric arrive at the worker's receiver (`ttft-planner serve --otlp-port 4318`, every "
        "OpenTelemetry source on one port) or at `ttft-planner sources receive NAME`, with the token in that variable "
        "in their environment; point the SDKs' OTLP exporters at it with `Authorization: Bearer <token>`."
    )
    if not _submitted():
        return
    try:
        var = check_env_name(var, "The variable")
    except EnvNameError as exc:
        example = "LITELLM_DSN" if pulled_kind else "OTLP_TOKEN"
        _refuse("sources_add_var", md_text(f"{exc} (such as {example}: the value stays in the server's environment)."))
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
            else "point its exporters at the worker's receiver (`ttft-planner serve --otlp-port 4318`) or at "
            + md_text(f"ttft-planner sources receive {name.strip()}")  # outside text: a URL in it is code, not a link
        )
        ss.sources_flash = (
            "success",
            f"Added {md_text(name.strip())}: {then}."
            + ("" if not pulled_kind or is_set(var) else f" {md_text(unset(var))}"),
        )
        _reset_add_form()
        st.rerun()


def show_add_form(eng: Engine, *, expanded: bool) -> None:
    """The form, in an expander (open when there is no source yet)."""
    with st.expander("Add a source", expanded=expanded, icon=":material/add:"):
        kind_label = st.radio(  # by label: a kind's value ("litellm") is not for the page
            "Kind", list(KINDS.values()), horizontal=True, key="sources_add_kind"
        )
        kind = next(k for k, label in KINDS.items() if label == kind_label)
        with st.form("sources_add"):
            placeholder = {
                SourceKind.LITELLM: "prod-proxy",
                SourceKind.OTLP: "agents",
                SourceKind.PROMETHEUS: "engines",
            }
            name = st.text_input("Name", key="sources_add_name", placeholder=placeholder[kind], max_chars=120)
            if kind is SourceKind.PROMETHEUS:
                _add_prometheus(eng, name)
            else:
                _add_pulled_or_pushed(eng, name, kind)
