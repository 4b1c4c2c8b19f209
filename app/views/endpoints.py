"""Endpoints: what do we probe, how often, from where? (the worker probes these; results on the Probes page)"""

import time

import pandas as pd
import streamlit as st

from planner.endpoints.cold_policy import keeps_itself_warm
from planner.endpoints.providers import CatalogError, catalog, endpoint_fields, find_provider
from planner.endpoints.registry import (
    CONNECTION_POLICIES,
    NUMERIC_RULES,
    PROTOCOLS,
    EndpointError,
    EndpointNotFound,
    EndpointRow,
    add_endpoint,
    edit_endpoint,
    export_toml,
    form_message,
    import_toml,
    key_status,
    key_status_for,
    list_endpoints,
    min_interval_s,
    remove_endpoint,
)
from planner.endpoints.status import endpoint_state, failing_warnings
from planner.fleet.watch import endpoint_statuses, running_workers, worker_account
from planner.inputs.env_names import env_name_problem, shown_env_name
from planner.inputs.untrusted import md_text
from planner.probes.protocols import ProbeProtocol
from planner.probes.rtt import default_vantage
from planner.settings import DEFAULT_VANTAGE_NAME
from ttft_planner_app import viewer
from ttft_planner_app.auth import can, record, require
from ttft_planner_app.cache import engine
from ttft_planner_app.store_errors import STORE_FAILURES, show_store_failure
from ttft_planner_app.widgets import number_input_for, wrapped_table

st.title("Endpoints")
st.caption(
    "Each endpoint is probed by the worker (`ttft-planner worker`, started by `ttft-planner serve`) every interval, "
    "from every vantage that runs a worker. API keys are named by environment variable, never stored."
)
eng = engine()
ss = st.session_state
# What the last action did (shown after the rerun that refreshed the table), in a slot that is always there: a message
# that came and went would move every section below it, and Streamlit redraws a moved expander closed ("Fill the
# form" would hide the form it just filled).
flash_slot = st.empty()
flash, flash_errors = ss.pop("endpoints_flash", None), ss.pop("endpoints_flash_errors", [])
if flash or flash_errors:
    with flash_slot.container():
        if flash:
            st.success(flash)
        for line in flash_errors:
            st.error(line)


def _refuse_key(exc: Exception, key: str) -> None:
    """A refused API key variable: what was typed may be the key itself, so its box is emptied (never shown again)
    and the page runs again saying why; any other refusal returns."""
    if getattr(exc, "field", None) == "api_key_env":
        ss.pop(key, None)
        ss.endpoints_flash_errors = [md_text(form_message(exc))]
        st.rerun()


def _reset_form(prefix: str) -> None:
    """Forget a form's typed values (after a successful add), so the next run shows it empty."""
    for k in [k for k in ss if str(k).startswith(f"{prefix}_")]:
        del ss[k]


rows = list_endpoints(eng)
statuses = endpoint_statuses(eng)


def _reports(e: EndpointRow) -> list[dict]:
    """The status rows the workers reported for the stored endpoint `e`."""
    assert e.id is not None  # a stored endpoint has an id
    return statuses.get(e.id, [])


now_ms = int(time.time() * 1000)

leases = running_workers(eng, now_ms)
if leases:
    st.caption(
        "Workers running: "
        + ", ".join(
            f"vantage {md_text(repr(r['vantage']) if r['vantage'] else DEFAULT_VANTAGE_NAME)} "
            f"on {md_text(r['holder'].split(':')[0])}"
            for r in leases
        )
    )
else:  # the worker's own account (running and buffering, lease lapsed, or not running), not the lease row alone
    report = worker_account(eng, default_vantage(), now_ms, fmt_ms=viewer.fmt_ms)
    if report.level != "ok":
        st.warning(report.text, icon=":material/pause_circle:")


if rows:
    # Two tables that each fit the page at 1,400 px (one of 17 columns scrolled sideways and cut its last column
    # mid-word): who and where, then how each is probed.
    table = pd.DataFrame(
        [
            {
                "Name": e.name,
                "Status": endpoint_state(e, _reports(e)),
                "Provider": e.provider or "—",
                "Region": e.region or "—",
                "Model": e.model,
                "Key env var": shown_env_name(e.api_key_env, sigil="") if e.api_key_env else "—",
                "Interval (s)": f"{e.interval_s:,.0f}",
            }
            for e in rows
        ]
    )
    st.dataframe(
        table,
        hide_index=True,
        key="endpoints_table",
        column_config={  # px, together within the main column's ~930 px at a 1,400 px window
            "Name": st.column_config.TextColumn(width=220, pinned=True),
            "Status": st.column_config.TextColumn(width=140),
            "Provider": st.column_config.TextColumn(width=95),
            "Region": st.column_config.TextColumn(width=105),
            "Model": st.column_config.TextColumn(width=170),
            "Key env var": st.column_config.TextColumn(width=110),
            "Interval (s)": st.column_config.TextColumn(width=80),
        },
    )
    with st.expander("How each endpoint is probed (protocol, base URL, timeout, tokens, connection, vantage)"):
        wrapped_table(
            pd.DataFrame(
                [
                    {
                        "Name": e.name,
                        "Protocol": e.protocol,
                        "Base URL": e.base_url,
                        "Timeout (s)": f"{e.timeout_s:,.0f}",
                        "Prompt tokens": f"{e.prompt_tokens:,}",
                        "Max tokens": f"{e.max_tokens:,}",
                        "Connection": e.connection_policy,
                        "Scale-down window (s)": "—"
                        if e.scale_down_window_s is None
                        else f"{e.scale_down_window_s:,.0f}",
                        "Enabled": "yes" if e.enabled else "no",
                        "Vantage": e.vantage or "every worker",
                        "Simulated": "yes" if e.simulated else "no",
                    }
                    for e in rows
                ]
            )
        )
    warm = [e.name for e in rows if e.enabled and keeps_itself_warm(e.interval_s, e.scale_down_window_s)]
    if warm:
        st.info(
            "Probed more often than their scale-down window, so the probes keep them warm: "
            f"{md_text(', '.join(warm))}. "
            "Use a cold reading (Probes page) to measure their cold start.",
            icon=":material/local_fire_department:",
        )
    for e in rows:
        for line in failing_warnings(e, _reports(e)):
            st.warning(md_text(line))
else:
    st.info("No endpoints yet. Add one below, or import a TOML file.")


def _form(prefix: str, e=None) -> dict:
    """The endpoint fields as widgets (prefilled from `e`); returns their values."""
    g = lambda f, d: getattr(e, f) if e is not None else d
    # Three across for short fields; a URL and a model id get two thirds of the width (a full base URL, a Bedrock
    # inference-profile id, stay readable in their box at 1,400 px).
    c = st.columns(3)
    wide = st.columns([2, 1])
    wide2 = st.columns([2, 1])
    c2 = st.columns(3)
    c3 = st.columns(3)
    c4 = st.columns(3)
    key_var = g("api_key_env", "")
    if key_var and env_name_problem(key_var, ""):  # a key an older version kept here, unchecked: never shown again
        key_var = ""
    out = {
        "name": c[0].text_input("Name", g("name", ""), key=f"{prefix}_name"),
        "provider": c[1].text_input("Provider", g("provider", ""), key=f"{prefix}_provider"),
        "region": c[2].text_input("Region", g("region", ""), key=f"{prefix}_region"),
        "base_url": wide[0].text_input(
            "Base URL",
            g("base_url", ""),
            key=f"{prefix}_base_url",
            placeholder="https://api.example.com/v1",
            help="http:// or https:// only.",
        ),
        "api_key_env": wide[1].text_input(
            "API key env var (name, not the key)",
            key_var,
            key=f"{prefix}_key",
            placeholder="OPENAI_API_KEY",
        ),
        "model": wide2[0].text_input("Model", g("model", ""), key=f"{prefix}_model"),
        "protocol": wide2[1].selectbox(
            "Protocol",
            PROTOCOLS,
            index=PROTOCOLS.index(g("protocol", ProbeProtocol.OPENAI_CHAT.value)),
            key=f"{prefix}_protocol",
        ),
        # each bound is the field's rule (planner.endpoints.registry.NUMERIC_RULES: the command's, the TOML import's)
        "interval_s": number_input_for(
            NUMERIC_RULES["interval_s"],
            "Probe interval (s)",
            value=g("interval_s", 60.0),
            key=f"{prefix}_interval",
            where=c2[0],
            help=f"At least {min_interval_s():g} s.",
        ),
        "timeout_s": number_input_for(
            NUMERIC_RULES["timeout_s"], "Timeout (s)", value=g("timeout_s", 30.0), key=f"{prefix}_timeout", where=c2[1]
        ),
        "connection_policy": c2[2].selectbox(
            "Connection",
            CONNECTION_POLICIES,
            index=CONNECTION_POLICIES.index(g("connection_policy", "fresh")),
            key=f"{prefix}_conn",
        ),
        "prompt_tokens": number_input_for(
            NUMERIC_RULES["prompt_tokens"],
            "Prompt tokens",
            value=g("prompt_tokens", 1000),
            key=f"{prefix}_prompt",
            where=c3[0],
        ),
        "max_tokens": number_input_for(
            NUMERIC_RULES["max_tokens"], "Max tokens", value=g("max_tokens", 64), key=f"{prefix}_max", where=c3[1]
        ),
        "scale_down_window_s": number_input_for(
            NUMERIC_RULES["scale_down_window_s"],
            "Scale-down window (s), if known",
            value=g("scale_down_window_s", None),
            key=f"{prefix}_window",
            where=c3[2],
        ),
        "vantage": c4[0].text_input("Vantage (empty = every worker)", g("vantage", ""), key=f"{prefix}_vantage"),
        "enabled": c4[1].checkbox("Enabled", value=bool(g("enabled", True)), key=f"{prefix}_enabled"),
    }
    return out


_FORM_KEYS = {
    "name": "add_name",
    "provider": "add_provider",
    "region": "add_region",
    "base_url": "add_base_url",
    "model": "add_model",
    "api_key_env": "add_key",
    "protocol": "add_protocol",
}


def _fill_from_catalog() -> None:
    """Button callback: put the picked catalog row's fields into the add form (runs before the form is drawn)."""
    entry = find_provider(ss.cat_provider)
    params = {p.name: ss.get(f"cat_param_{entry.key}_{p.name}", "") for p in entry.params}
    try:
        given = {k: v for k, v in params.items() if v}
        fields = endpoint_fields(entry, ss.cat_model, ss.get("cat_region") or None, given)
    except CatalogError as exc:
        ss.cat_error = str(exc)
        return
    for name, key in _FORM_KEYS.items():
        ss[key] = fields[name]
    ss.endpoints_flash = f"Filled the form from the catalog: {md_text(entry.provider)} · {md_text(fields['model'])}."


def _catalog_picker() -> None:
    """Pick provider, model and region from assets/providers.toml; the key variable shows present/missing at once."""
    entries = {p.key: p for p in catalog()}
    c = st.columns(3)
    key = c[0].selectbox(
        "From the provider catalog", list(entries), key="cat_provider", format_func=lambda k: entries[k].provider
    )
    entry = entries[key]
    c[1].selectbox(
        "Model", entry.models, key="cat_model", help="The catalog's model ids; edit the form to use another."
    )
    if entry.regions:
        c[2].selectbox(
            "Region", list(entry.regions), key="cat_region", index=list(entry.regions).index(entry.default_region)
        )
    else:
        ss.cat_region = ""
    for p in entry.params:
        st.text_input(
            p.help or p.name,
            key=f"cat_param_{entry.key}_{p.name}",
            placeholder=f"from ${p.env}" if p.env else p.default,
            help=f"Fills {{{p.name}}} in "
            + md_text(entry.base_url_for(ss.get("cat_region") or entry.default_region))
            + (f"; empty = ${p.env}" if p.env else ""),
        )
    status = key_status_for(entry.key_env, entry.protocol)
    shown = {"key set": "present", "key missing": "missing"}.get(status, status.removeprefix("key "))
    key_line = f"Key variable `{entry.key_env}`: **{shown}**" if entry.key_env else f"Credentials: {shown}"
    st.caption(
        f"{key_line} · {entry.front_door} front door · {md_text(entry.scale_to_zero)} "
        f"· source: {md_text(entry.source)}, as of {entry.as_of}"
    )
    st.button("Fill the form", key="cat_fill", on_click=_fill_from_catalog, icon=":material/input:")
    if "cat_error" in ss:
        st.error(md_text(ss.pop("cat_error")))


with st.expander("Add an endpoint", expanded=not rows, icon=":material/add:"):
    _catalog_picker()
    with st.form("add_endpoint", clear_on_submit=False):
        values = _form("add")
        if st.form_submit_button("Add endpoint", type="primary", disabled=not can("endpoint.write")) and require(
            "endpoint.write"
        ):
            try:
                row = add_endpoint(eng, values)
                record("endpoint.write", row.name, f"created: {row.protocol} {row.model}")
                ss.endpoints_flash = (
                    f"Added {md_text(row.name)}: the worker starts probing it within a few seconds ({key_status(row)})."
                )
                _reset_form("add")
                st.rerun()
            except EndpointError as exc:
                _refuse_key(exc, "add_key")
                st.error(md_text(form_message(exc)))
            except STORE_FAILURES as exc:
                show_store_failure(exc)

if rows:
    with st.expander("Edit or remove", icon=":material/edit:"):
        name = st.selectbox("Endpoint", [e.name for e in rows], key="edit_pick")
        current = next(e for e in rows if e.name == name)
        with st.form(f"edit_{current.id}"):
            values = _form(f"edit{current.id}", current)
            save, remove = st.columns(2)
            sure = remove.checkbox(f"Yes, remove {name} and all its samples", key=f"edit{current.id}_sure")
            if save.form_submit_button("Save changes", type="primary", disabled=not can("endpoint.write")) and require(
                "endpoint.write"
            ):
                try:
                    edit_endpoint(eng, name, values)
                    record("endpoint.write", name, "changed")
                    ss.endpoints_flash = f"Saved {values.get('name') or name}."
                    st.rerun()
                except (EndpointError, EndpointNotFound) as exc:
                    _refuse_key(exc, f"edit{current.id}_key")
                    st.error(md_text(form_message(exc)))
                except STORE_FAILURES as exc:
                    show_store_failure(exc)
            if remove.form_submit_button(
                "Remove endpoint and its samples", disabled=not can("endpoint.write")
            ) and require("endpoint.write"):
                if not sure:
                    st.warning(
                        f"Tick “Yes, remove {md_text(name)} and all its samples” first: removing cannot be undone."
                    )
                else:
                    try:
                        remove_endpoint(eng, name)
                        record("endpoint.write", name, "deleted with its samples")
                        ss.endpoints_flash = f"Removed {md_text(name)} and its samples."
                        st.rerun()
                    except STORE_FAILURES as exc:
                        show_store_failure(exc)

with st.expander("Import / export (TOML, for keeping the list in git)", icon=":material/swap_vert:"):
    st.download_button(
        "Export endpoints.toml",
        export_toml(eng),
        file_name="endpoints.toml",
        mime="application/toml",
        on_click="ignore",
    )
    up = st.file_uploader("Import a TOML file of [[endpoint]] tables", type=["toml"], key="endpoints_import")
    if (
        up is not None
        and st.button("Import", key="endpoints_do_import", disabled=not can("endpoint.write"))
        and require("endpoint.write")
    ):
        try:
            res = import_toml(eng, up.getvalue().decode("utf-8", errors="replace"))
            record("endpoint.write", up.name, f"imported: added {len(res.added)}, updated {len(res.updated)}")
            rejected = [
                md_text(f"{up.name}: endpoint #{i} {n!r}: {form_message(EndpointError(msg))}")
                for i, n, msg in res.rejected
            ]
            if res.added or res.updated:
                ss.endpoints_flash = (
                    f"Imported {md_text(up.name)}: added {len(res.added)}, updated {len(res.updated)}, "
                    f"rejected {len(res.rejected)}."
                )
                ss.endpoints_flash_errors = rejected
                st.rerun()  # the table above shows the imported endpoints
            st.info(f"Imported nothing from {md_text(up.name)}: rejected {len(res.rejected)}.")
            for line in rejected:
                st.error(line)
        except EndpointError as exc:
            st.error(md_text(f"{up.name}: {form_message(exc)}"))
        except STORE_FAILURES as exc:
            show_store_failure(exc)
