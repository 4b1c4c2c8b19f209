"""Alerts: SLO rules over the stored probes (and over production requests from live sources), the state of every
series they watch, their history and deliveries."""

import os
import time

import pandas as pd
import streamlit as st

from planner import present
from planner.alerts import registry as store
from planner.alerts.notify import WEBHOOK_FORMATS, Notice, channels_of, send, shown_target
from planner.alerts.rules import AlertKind, AlertState, Rule, Transition, build_rule
from planner.alerts.targets import p95_targets
from planner.alerts.words import KIND_CHOICES, audit_detail, condition, format_value, target_words
from planner.endpoints.registry import list_endpoints
from planner.inputs.env_names import check_env_name, shown_env_name
from planner.inputs.untrusted import md_text
from planner.inputs.validate import (
    ALERT_CLEAR_MARGIN_PCT,
    ALERT_FOR_MIN,
    ALERT_MIN_N,
    ALERT_THRESHOLD,
    ALERT_WINDOW_MIN,
)
from ttft_planner_app.auth import can, record, require
from ttft_planner_app.cache import engine, store_url
from ttft_planner_app.store_errors import STORE_FAILURES, show_store_failure
from ttft_planner_app.viewer import fmt_ms
from ttft_planner_app.widgets import number_input_for, wrapped_table

st.title("Alerts")
st.caption(
    "Tell the team when the measured TTFT leaves the budget: a rule watches one endpoint (or all) from every vantage, "
    "fires only after its breach has held for the for-duration with at least the minimum n in the window, and "
    "resolves only once the value is back below the threshold by the clear margin. The worker evaluates the rules "
    "on its housekeeping tick (or run `ttft-planner alerts evaluate`); each transition notifies once per channel, "
    "and a failed delivery is retried with backoff. A production p95 TTFT rule watches your users' own requests to "
    "each endpoint instead, as a live source (the Sources page) read them: its series show the vantage “production”."
)
eng = engine()
URL = store_url()
ss = st.session_state
# What the last add or delete did, shown after the rerun that refreshed the page (a message shown before st.rerun()
# would be gone with it).
if "alerts_flash" in ss:
    st.success(ss.pop("alerts_flash"))

# The add form's inputs: forgotten after a rule is added, so the form shows empty again.
_FORM_KEYS = (
    "alert_name",
    "alert_kind",
    "alert_endpoint",
    "alert_interaction",
    "alert_threshold",
    "alert_window",
    "alert_for",
    "alert_min_n",
    "alert_clear",
    "alert_webhook_env",
    "alert_webhook_format",
    "alert_email",
)

# One cached reader per query (5 s, keyed by database URL, as on the Probes page): a rerun without a change reads
# nothing. This page's own writes forget them all (_forget), so an added or deleted rule shows at once; what the
# worker writes (evaluations, deliveries) shows within the 5 s.
_cached = st.cache_data(ttl=5, show_spinner=False)


@_cached
def _rules(url: str) -> list[Rule]:
    return store.load_rules(engine())


@_cached
def _endpoint_names(url: str) -> dict[int, str]:
    return {e.id: e.name for e in list_endpoints(engine()) if e.id is not None}  # a stored endpoint has an id


@_cached
def _series(url: str):
    return store.series_frame(engine())


@_cached
def _history(url: str):
    return store.alert_history(engine())


@_cached
def _deliveries(url: str):
    return store.deliveries(engine())


@_cached
def _targets(url: str) -> dict[str, float]:
    return p95_targets(engine())


def _forget() -> None:
    """Drop what the readers hold about rules: a rule's removal takes its series, history and deliveries with it."""
    for reader in (_rules, _series, _history, _deliveries):
        reader.clear()


def _after_rule_write(verb: str, rule: Rule, flash: str) -> None:
    """A rule was `verb` ("added", "deleted"): drop what the readers hold, audit it, say `flash` on the next run
    (Markdown, names already made inert), and run the page again."""
    _forget()
    record("alert.write", rule.name, audit_detail(verb, rule))
    ss.alerts_flash = flash
    st.rerun()


rules = _rules(URL)
endpoints = _endpoint_names(URL)


def _when(epoch_ms, fmt: str = "%Y-%m-%d %H:%M") -> str:
    return "—" if present.is_missing(epoch_ms) else fmt_ms(epoch_ms, fmt=fmt)


# A state as a word with a coloured dot (● is in every font; a colour emoji is a box where none is installed)
_STATE_WORD = {str(AlertState.FIRING): "● firing", str(AlertState.PENDING): "● pending", str(AlertState.OK): "● ok"}
_STATE_CSS = {
    str(AlertState.FIRING): "color: #c62828; font-weight: 600",
    str(AlertState.PENDING): "color: #b26a00",
    str(AlertState.OK): "color: #2e7d32",
}

# ---- current state
series = _series(URL)
firing = int((series["state"] == str(AlertState.FIRING)).sum()) if not series.empty else 0
c1, c2, c3 = st.columns(3)
c1.metric("Rules", present.count(len(rules)))
c2.metric("Series firing", present.count(firing))
c3.metric("Series watched", present.count(len(series)))
if not rules:
    st.info(
        "No alert rules yet. Add one below, or with `ttft-planner alerts add chat-p95 --interaction chat "
        "--webhook-env TEAM_SLACK_WEBHOOK`."
    )
elif series.empty:
    st.info(
        "No rule has been evaluated yet: the worker evaluates them on its next tick "
        "(or run `ttft-planner alerts evaluate`)."
    )
else:
    shown = series.assign(
        state=series["state"].map(_STATE_WORD),
        value=[format_value(AlertKind(k), v) for k, v in zip(series["kind"], series["value"], strict=True)],
        threshold=[format_value(AlertKind(k), v) for k, v in zip(series["kind"], series["threshold"], strict=True)],
        since=[_when(v) for v in series["since_ms"]],
        evaluated=[_when(v) for v in series["evaluated_at_ms"]],
    )[["state", "rule", "endpoint", "value", "threshold", "n", "since", "evaluated", "vantage"]]
    # Wrapped, not a grid: a long endpoint name wraps in its cell, and both times and the vantage stay in view.
    frame = present.display_frame(shown, {"n": present.count})
    colours = series["state"].map(_STATE_CSS).fillna("").to_numpy()
    wrapped_table(frame, css=pd.DataFrame({frame.columns[0]: colours}, index=frame.index))

# ---- rules
if rules:
    st.subheader("Rules")
    for r in rules:
        where = endpoints.get(r.endpoint_id, "every endpoint") if r.endpoint_id is not None else "every endpoint"
        # a webhook's variable kept by an older version that did not check may be the URL itself: never shown
        shown = [(c, shown_target(c, t)) for c, t in channels_of(r)]
        channels = ", ".join(f"{c} {t}" for c, t in shown) or "no channel (this page only)"
        with st.container(border=True):
            st.markdown(
                f"**{md_text(r.name)}** — {md_text(condition(r))} on {md_text(where)}; "
                f"window {r.window_s / 60:g} min, for {r.for_s / 60:g} min, min n {r.min_n}, "
                f"clears {r.clear_margin:.0%} below · {md_text(channels)}"
            )
            if r.webhook_env:
                st.caption(
                    f"`{md_text(shown_env_name(r.webhook_env, sigil=''))}` is "
                    + ("present" if os.environ.get(r.webhook_env) else "**missing** on this server")
                )
            b1, b2, _ = st.columns([1, 1, 4])
            if b1.button(
                "Send test", key=f"alert_test_{r.id}", disabled=not channels_of(r) or not can("alert.write")
            ) and require("alert.write"):
                notice = Notice(
                    r,
                    Transition.FIRING,
                    "test-endpoint",
                    "test",
                    r.threshold,
                    r.min_n,
                    int(time.time() * 1000),
                    test=True,
                )
                for channel, target in channels_of(r):
                    try:
                        send(channel, target, notice)
                        st.success(f"Test sent by {channel} to {md_text(shown_target(channel, target))}.")
                    except RuntimeError as exc:
                        st.error(f"Test by {channel} failed: {md_text(str(exc))}")
            confirm = b2.checkbox("Delete…", key=f"alert_del_confirm_{r.id}", disabled=not can("alert.write"))
            if (
                confirm
                and st.button(f"Delete rule {r.name} and its history", key=f"alert_del_{r.id}", type="primary")
                and require("alert.write")
            ):
                try:
                    store.remove_rule(eng, r.name)
                except STORE_FAILURES as exc:
                    show_store_failure(exc)
                else:
                    _after_rule_write("deleted", r, f"Deleted rule {md_text(r.name)} with its history and deliveries.")

# ---- add a rule
with st.expander("Add a rule", expanded=not rules):
    targets = _targets(URL)
    with st.form("alert_add"):
        name = st.text_input("Name", placeholder="chat p95", key="alert_name")
        kind = st.selectbox(
            "Kind", [k.value for k in AlertKind], key="alert_kind", format_func=lambda k: KIND_CHOICES[AlertKind(k)]
        )
        ep_choice = st.selectbox(
            "Endpoint",
            [None, *endpoints],
            format_func=lambda i: "All endpoints" if i is None else endpoints[i],
            key="alert_endpoint",
        )
        interaction = st.selectbox(
            "Threshold from an interaction type's or a saved worksheet's p95 target (p95 and production p95 only)",
            ["", *targets],
            format_func=lambda k: "— enter a threshold —" if not k else f"{target_words(k)} ({targets[k]:g} ms)",
            key="alert_interaction",
        )
        # 0 (the open end of its rule) reads as "no threshold typed": the interaction type's target then
        threshold = number_input_for(
            ALERT_THRESHOLD, "Threshold (ms, %, or s by kind)", value=0.0, key="alert_threshold"
        )
        c1, c2, c3, c4 = st.columns(4)  # the ranges of `alerts add`'s options, checked again by build_rule
        window_min = number_input_for(ALERT_WINDOW_MIN, "Window (min)", value=15.0, key="alert_window", where=c1)
        for_min = number_input_for(ALERT_FOR_MIN, "For (min)", value=5.0, key="alert_for", where=c2)
        min_n = number_input_for(ALERT_MIN_N, "Min n", value=20, step=1, key="alert_min_n", where=c3)
        clear_pct = number_input_for(
            ALERT_CLEAR_MARGIN_PCT, "Clear margin (%)", value=10.0, key="alert_clear", where=c4
        )
        webhook_env = st.text_input(
            "Webhook URL variable (its NAME; the URL holds a token and is never stored)", key="alert_webhook_env"
        )
        webhook_format = st.selectbox("Webhook body", WEBHOOK_FORMATS, key="alert_webhook_format")
        email_to = st.text_input("E-mail to (comma-separated; SMTP from the SMTP_* settings)", key="alert_email")
        if st.form_submit_button("Add rule", disabled=not can("alert.write")) and require("alert.write"):
            try:
                webhook_env = check_env_name(webhook_env, "The webhook URL variable", optional=True)  # never echoed
                rule = build_rule(
                    name,
                    kind,
                    threshold=threshold or None,
                    window_min=window_min,
                    for_min=for_min,
                    min_n=int(min_n),
                    clear_margin_pct=clear_pct,
                    endpoint_id=ep_choice,
                    interaction=interaction,
                    targets_ms=targets,
                    webhook_env=webhook_env,
                    webhook_format=webhook_format,
                    email_to=email_to,
                )
                store.add_rule(eng, rule, int(time.time() * 1000))
            except ValueError as exc:
                st.error(md_text(str(exc)))
            except STORE_FAILURES as exc:
                show_store_failure(exc)
            else:
                for key in _FORM_KEYS:
                    ss.pop(key, None)
                _after_rule_write("added", rule, f"Added rule {md_text(rule.name)}: {md_text(condition(rule))}.")

# ---- history and deliveries
history = _history(URL)
if not history.empty:
    st.subheader("History")
    # Wrapped, not a grid: the message is a sentence or two, and a grid cuts it at the page's edge.
    wrapped_table(
        present.display_frame(
            history.assign(at=[_when(v, "%Y-%m-%d %H:%M:%S") for v in history["at_ms"]])[
                ["at", "transition", "rule", "endpoint", "vantage", "message"]
            ]
        )
    )
    newest = history.iloc[0]  # the message is a sentence or two: the newest one in full, the rest in the table
    st.caption(f"Newest ({_when(newest['at_ms'], '%Y-%m-%d %H:%M:%S')}): {md_text(newest['message'])}")
deliveries = _deliveries(URL)
if not deliveries.empty:
    failed = deliveries[deliveries["delivered_at_ms"].isna()]
    st.subheader("Deliveries")
    if not failed.empty:
        last = failed.iloc[0]["last_error"]
        st.warning(
            f"{len(failed)} notification(s) not delivered yet; retried with backoff up to 5 attempts."
            + ("" if present.is_missing(last) else f" The last error: {md_text(last)}.")
        )
    shown = deliveries.assign(
        delivered=[_when(v, "%H:%M:%S") for v in deliveries["delivered_at_ms"]],
        next_attempt=[_when(v, "%H:%M:%S") for v in deliveries["next_attempt_at_ms"]],
        target=[shown_target(c, t) for c, t in zip(deliveries["channel"], deliveries["target"], strict=True)],
    )[["event_id", "channel", "target", "attempts", "delivered", "next_attempt", "last_error"]]
    wrapped_table(present.display_frame(shown, {"attempts": present.count}))  # an error is a sentence: it wraps
