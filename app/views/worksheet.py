"""Worksheet: does our p95 target leave room for prefill? (the home page)"""

import math

import streamlit as st

from app import worksheet_state
from app.cache import try_engine
from app.charts.worksheet import waterfall_figure
from app.views.worksheet_tabs.saved import render_compare, render_save
from app.views.worksheet_tabs.share import render_share
from planner.budget import SEGMENTS, BudgetError, Worksheet, compute, verdict_text
from planner.presets import interactions
from planner.provenance import Figure
from planner.untrusted import md_text
from planner.worksheet_report import per_interaction_rows
from planner.worksheet_url import CUSTOM_PARAM, PARAMS, custom_key, format_custom, parse_custom

BUILTIN = {i.key: i for i in interactions()}
DEFAULTS = Worksheet()
FIELD_OF = {p.key: p.field for p in PARAMS}  # widget key → worksheet field
KEY_OF = {p.field: p.key for p in PARAMS}

# ---- session state: the worksheet's figures (with provenance) and its interaction types
ss = st.session_state
if "ws_figures" not in ss:
    ss.ws_figures = {f: getattr(DEFAULTS, f).to_dict() for f in worksheet_state.FIELDS}
    ss.ws_targets = dict(DEFAULTS.targets_ms)
    ss.ws_labels = dict(DEFAULTS.target_labels)
    ss.ws_name = "Untitled"
    for key, label, target in parse_custom(st.query_params.get(CUSTOM_PARAM, "")):
        ss.ws_targets[key], ss.ws_labels[key] = target, label


def _apply(ws: Worksheet) -> None:
    """Load a worksheet into the widgets (called from callbacks, before widgets render)."""
    ss.ws_targets, ss.ws_labels = dict(ws.targets_ms), dict(ws.target_labels)
    ss.ws_figures = {f: getattr(ws, f).to_dict() for f in worksheet_state.FIELDS}
    ss.ws_name = ws.name
    ss.interaction = ws.interaction
    ss.target_ms = ws.target_ms
    for field in worksheet_state.FIELDS:
        ss[KEY_OF[field]] = getattr(ws, field).value


# Figures handed over by other pages (Regions, Probes, Logs, Capacity) replace typed values.
for field, figure in worksheet_state.take().items():
    ss.ws_figures[field] = figure.to_dict()
    ss[KEY_OF[field]] = figure.value


def _on_interaction() -> None:
    ss.target_ms = ss.ws_targets[ss.interaction]


st.title("TTFT worksheet")
st.caption(
    "p95 TTFT = admission/queueing + weight loading + prefill + network. "
    "Subtract the three you cannot choose away from your target: what is left is the prefill budget you are buying."
)

inputs, results = st.columns([2, 3], gap="large")

with inputs:
    options = list(ss.ws_targets)
    labels = dict(ss.ws_labels)
    st.selectbox(
        "Interaction type", options, index=options.index(DEFAULTS.interaction), format_func=lambda k: labels.get(k, k),
        key="interaction", bind="query-params", on_change=_on_interaction, help="Each interaction type has its own p95 target.",
    )
    interaction = ss.interaction if ss.get("interaction") in ss.ws_targets else options[0]
    if "target_ms" not in ss and "target_ms" not in st.query_params:
        ss.target_ms = ss.ws_targets[interaction]
    target_ms = st.number_input(
        "p95 TTFT target (ms)", min_value=0.0, step=50.0, format="%.0f", key="target_ms", bind="query-params", help=PARAMS[0].help,
    )
    ss.ws_targets[interaction] = target_ms

    def figure_input(field: str, label: str, **kwargs) -> float:
        key = KEY_OF[field]
        fig = Figure.from_dict(ss.ws_figures[field])
        if key not in ss and key not in st.query_params:
            ss[key] = fig.value
        param = next(p for p in PARAMS if p.key == key)
        value = st.number_input(label, key=key, bind="query-params", help=param.help, **kwargs)
        fig = fig.with_value(value)  # an edited value becomes a typed override
        ss.ws_figures[field] = fig.to_dict()
        st.caption(f":material/{'sensors' if fig.is_measured else 'edit'}: {md_text(fig.describe())}")
        return value

    st.subheader("Segments you cannot choose away")
    seg_ms = {field: figure_input(field, f"{label} (ms)", min_value=0.0, step=10.0, format="%.0f") for field, label in SEGMENTS.items()}
    st.subheader("Prefill")
    prefill_tps = figure_input("prefill_tokens_per_s", "Prefill rate (uncached prompt tokens/s)", min_value=0.0, step=500.0, format="%.0f")
    prompt_p95 = figure_input("prompt_tokens_p95", "p95 prompt (tokens)", min_value=0.0, step=250.0, format="%.0f")
    cache_hit = figure_input("cache_hit_fraction", "Prefix-cache hit rate (0–1)", min_value=0.0, max_value=1.0, step=0.05, format="%.2f")

    with st.expander("Add an interaction type"):
        new_label = st.text_input("Name", key="new_interaction_label", placeholder="e.g. Code review bot")
        new_target = st.number_input("p95 target (ms)", min_value=1.0, value=2000.0, step=100.0, key="new_interaction_target")
        if st.button("Add interaction type", key="add_interaction"):
            if not new_label.strip():
                st.error("Give the interaction type a name.")
            else:
                key = custom_key(new_label)
                ss.ws_targets[key], ss.ws_labels[key] = new_target, new_label.strip()
                st.query_params[CUSTOM_PARAM] = format_custom(ss.ws_targets, ss.ws_labels, set(BUILTIN))
                st.rerun()

ws = Worksheet(
    name=ss.ws_name,
    interaction=interaction,
    targets_ms=dict(ss.ws_targets),
    target_labels=dict(ss.ws_labels),
    **{field: Figure.from_dict(ss.ws_figures[field]) for field in worksheet_state.FIELDS},
)

with results:
    problem = None
    try:
        result = compute(target_ms, *seg_ms.values(), prefill_tps, prompt_p95, cache_hit)
    except BudgetError as exc:
        problem = str(exc)
        try:
            result = compute(target_ms, *seg_ms.values())
        except BudgetError:
            result = None
    if problem:
        st.error(f"Cannot compute prefill: {problem}.", icon=":material/error:")
    if result is not None:
        level, sentence = verdict_text(result)
        {"ok": st.success, "warn": st.warning, "error": st.error}[level](sentence)
        m1, m2, m3 = st.columns(3)
        m1.metric("Prefill budget", f"{result.prefill_budget_ms:,.0f} ms")
        needed = result.prefill_needed_ms
        m2.metric("Prefill needed (p95 prompt)", "—" if math.isnan(needed) else f"{needed:,.0f} ms")
        mx = result.max_prompt_tokens_p95
        m3.metric("Largest p95 prompt that fits (tokens)", "—" if math.isnan(mx) else ("unlimited" if math.isinf(mx) else f"{mx:,.0f}"))
        st.plotly_chart(waterfall_figure(result, ss.ws_labels.get(interaction, interaction)), key="waterfall")
        if not problem:
            st.markdown("**The same segments against every interaction type**")
            st.dataframe(
                per_interaction_rows(ws),
                hide_index=True,
                column_config={
                    "target_ms": st.column_config.NumberColumn("target ms", format="%.0f"),
                    "prefill_budget_ms": st.column_config.NumberColumn("prefill budget ms", format="%.0f"),
                    "prefill_needed_ms": st.column_config.NumberColumn("prefill needed ms", format="%.0f"),
                    "max_prompt_tokens_p95": st.column_config.NumberColumn("largest p95 prompt", format="%.0f"),
                },
            )

st.divider()
engine, store_problem = try_engine()
save_tab, compare_tab, share_tab = st.tabs(["Save and open", "Compare saved worksheets", "Share and export"])
with save_tab:
    render_save(engine, store_problem, ws, _apply)
with compare_tab:
    render_compare(engine)
with share_tab:
    render_share(ws, set(BUILTIN), problem)
