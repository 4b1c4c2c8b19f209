"""Worksheet: does our p95 target leave room for prefill? (the home page)"""

import math

import streamlit as st

from planner import present
from planner.inputs.untrusted import md_text
from planner.inputs.validate import DURATION_MS, FRACTION, PROMPT_TOKENS_P95, TARGET_MS, TOKENS_PER_S, Rule
from planner.worksheet.budget import SEGMENTS, BudgetError, BudgetResult, Worksheet, compute, verdict_text
from planner.worksheet.first_step import first_step
from planner.worksheet.provenance import Figure
from planner.worksheet.report import per_interaction_rows
from planner.worksheet.url import PARAMS, custom_key
from ttft_planner_app import viewer, worksheet_state
from ttft_planner_app.cache import try_engine
from ttft_planner_app.charts.worksheet import waterfall_figure
from ttft_planner_app.views.worksheet_tabs.saved import render_compare, render_save
from ttft_planner_app.views.worksheet_tabs.share import render_share
from ttft_planner_app.widgets import number_input_for

KEY_OF = {p.field: p.key for p in PARAMS}  # worksheet field → widget key (== URL parameter)
HELP_OF = {p.key: p.help for p in PARAMS}

# ---- this session's worksheet: seeded from the URL once, then kept in session state across pages
ss = st.session_state


def _seed_widgets(ws: Worksheet) -> None:
    """Put the worksheet's values into the widgets (from callbacks or before the widgets are drawn)."""
    ss.interaction = ws.interaction
    ss.target_ms = ws.target_ms
    for field in worksheet_state.FIELDS:
        ss[KEY_OF[field]] = getattr(ws, field).value


if worksheet_state.ensure(st.query_params.to_dict()):
    _seed_widgets(worksheet_state.get())


def _apply(ws: Worksheet) -> None:
    """Load a saved worksheet (a callback, before widgets render): its inputs, provenance and name."""
    worksheet_state.put(ws)
    _seed_widgets(ws)


# Figures handed over by other pages (Regions, Probes, Logs, Capacity) replace typed values.
for field, figure in worksheet_state.take().items():
    ss.ws_figures[field] = figure.to_dict()
    ss[KEY_OF[field]] = figure.value


def _on_interaction() -> None:
    ss.ws_interaction = ss.interaction
    ss.target_ms = ss.ws_targets[ss.interaction]


def _add_interaction() -> None:
    label = (ss.get("new_interaction_label") or "").strip()
    if not label:
        ss.add_interaction_error = "Give the interaction type a name."
        return
    key = custom_key(label)
    ss.ws_targets[key], ss.ws_labels[key] = float(ss.new_interaction_target), label
    ss.ws_interaction = ss.interaction = key
    ss.target_ms = ss.ws_targets[key]
    ss.new_interaction_label = ""
    ss.add_interaction_notice = f"Added “{label}” (p95 ≤ {present.ms(ss.ws_targets[key])}) and selected it."


_VERDICT = {"ok": "fits", "warn": "prompt too long", "error": "over budget"}


def _row(r: dict) -> dict:
    """One per-interaction row as the page shows it: labelled columns, formatted numbers with units."""
    mx = r.get("max_prompt_tokens_p95")
    return {
        "Interaction": r["interaction"],
        "Target": present.ms(r.get("target_ms")),
        "Prefill budget": present.ms(r.get("prefill_budget_ms")),
        "Needed": present.ms(r.get("prefill_needed_ms")),
        "Max p95 prompt": (
            "no budget"
            if (r.get("prefill_budget_ms") or 0) <= 0
            else "unlimited"
            if mx is not None and math.isinf(mx)
            else present.tokens(mx)
        ),
        "Verdict": _VERDICT.get(r["verdict"], r["verdict"]),
    }


st.title("TTFT worksheet")
st.caption(
    "p95 TTFT = admission/queueing + weight loading + prefill + network. "
    "Subtract the three you cannot choose away from your target: what is left is the prefill budget you are buying."
)

guide = first_step({f: Figure.from_dict(d) for f, d in ss.ws_figures.items()})
# Drawn on every run, empty once a figure is measured: the elements below keep their place in the page's tree (a
# block that came and went made the browser keep a second, stale set of the tabs below).
first_step_box = st.container(key="first_step")
if guide:  # a first-time visitor: every figure typed; each links to the page that measures it
    with first_step_box.container(border=True):
        st.markdown("**First step: measure your own figures.** Each is typed until a page hands it over:")
        for where in guide:
            st.page_link(
                f"views/{where.page}.py",
                label=f"{where.label} → {where.page_title}: {where.how}",
                icon=":material/arrow_forward:",
            )

inputs, results = st.columns([2, 3], gap="large")
tz = viewer.time_zone()

with inputs:
    options = list(ss.ws_targets)
    labels = dict(ss.ws_labels)
    if ss.get("interaction") not in options:
        ss.interaction = ss.ws_interaction if ss.ws_interaction in options else options[0]
    st.selectbox(
        "Interaction type",
        options,
        format_func=lambda k: labels.get(k, k),
        key="interaction",
        persist_state="session",
        on_change=_on_interaction,
        help="Each interaction type has its own p95 target.",
    )
    interaction = ss.interaction
    ss.ws_interaction = interaction
    if "target_ms" not in ss:
        ss.target_ms = ss.ws_targets[interaction]
    target_ms = number_input_for(
        TARGET_MS,
        "p95 TTFT target (ms)",
        step=50.0,
        format="%.0f",
        key="target_ms",
        persist_state="session",
        help=HELP_OF["target_ms"],
    )
    ss.ws_targets[interaction] = target_ms

    def figure_input(field: str, label: str, rule: Rule, **kwargs) -> float:
        key = KEY_OF[field]
        fig = Figure.from_dict(ss.ws_figures[field])
        if key not in ss:
            ss[key] = fig.value
        # persist_state: Streamlit resumes the session on a reload, and the new page must be told the kept value
        value = number_input_for(rule, label, key=key, help=HELP_OF[key], persist_state="session", **kwargs)
        fig = fig.with_value(value)  # an edited value becomes a typed override
        ss.ws_figures[field] = fig.to_dict()
        st.caption(f":material/{'sensors' if fig.is_measured else 'edit'}: {md_text(fig.describe(tz))}")
        return value

    st.subheader("Segments you cannot choose away")
    seg_ms = {
        field: figure_input(field, f"{label} (ms)", DURATION_MS, step=10.0, format="%.0f")
        for field, label in SEGMENTS.items()
    }
    st.subheader("Prefill")
    prefill_tps = figure_input(
        "prefill_tokens_per_s", "Prefill rate (uncached prompt tokens/s)", TOKENS_PER_S, step=500.0, format="%.0f"
    )
    prompt_p95 = figure_input("prompt_tokens_p95", "p95 prompt (tokens)", PROMPT_TOKENS_P95, step=250.0, format="%.0f")
    cache_hit = figure_input("cache_hit_fraction", "Prefix-cache hit rate (0–1)", FRACTION, step=0.05, format="%.2f")

    with st.expander("Add an interaction type", expanded=bool(ss.get("add_interaction_error"))):
        st.text_input("Name", key="new_interaction_label", placeholder="e.g. Code review bot")
        number_input_for(TARGET_MS, "p95 target (ms)", value=2000.0, step=100.0, key="new_interaction_target")
        st.button("Add interaction type", key="add_interaction", on_click=_add_interaction)
        if ss.get("add_interaction_error"):
            st.error(ss.pop("add_interaction_error"))
    if ss.get("add_interaction_notice"):
        st.success(ss.pop("add_interaction_notice"), icon=":material/check:")

ws = worksheet_state.get()
worksheet_state.sync_url(ws)  # the address bar reproduces the inputs and their provenance at all times

with results:
    problem = None
    result: BudgetResult | None
    try:
        result = compute(
            target_ms,
            **seg_ms,
            prefill_tokens_per_s=prefill_tps,
            prompt_tokens_p95=prompt_p95,
            cache_hit_fraction=cache_hit,
        )
    except BudgetError as exc:
        problem = str(exc)
        try:
            result = compute(target_ms, **seg_ms)
        except BudgetError:
            result = None
    if problem:
        st.error(f"Cannot compute prefill: {problem}.", icon=":material/error:")
    if result is not None:
        level, sentence = verdict_text(result)
        {"ok": st.success, "warn": st.warning, "error": st.error}[level](sentence)
        # two per row: "−19,913 ms" and "15,840 tokens" need the room (three in a row were cut off)
        m1, m2 = st.columns(2)
        m3, _ = st.columns(2)
        m1.metric("Prefill budget", present.ms(result.prefill_budget_ms))
        m2.metric(
            "Prefill needed",
            present.ms(result.prefill_needed_ms),
            help="For the uncached part of the p95 prompt: p95 prompt × (1 − cache-hit rate) ÷ prefill rate.",
        )
        mx = result.max_prompt_tokens_p95
        m3.metric(
            "Largest p95 prompt",
            "no budget" if result.prefill_budget_ms <= 0 else "unlimited" if math.isinf(mx) else present.tokens(mx),
            help="The longest p95 prompt (cached and uncached tokens) whose uncached part fits the prefill budget.",
        )
        st.plotly_chart(waterfall_figure(result, ss.ws_labels.get(interaction, interaction)), key="waterfall")

if result is not None and not problem:  # the page's width: six columns cut off the verdict in the results column
    st.markdown("**The same segments against every interaction type**")
    st.dataframe([_row(r) for r in per_interaction_rows(ws)], hide_index=True, key="per_interaction")

st.divider()
engine, store_problem = try_engine()
save_tab, compare_tab, share_tab = st.tabs(["Save and open", "Compare saved worksheets", "Share and export"])
with save_tab:
    render_save(engine, store_problem, ws, _apply)
with compare_tab:
    render_compare(engine)
with share_tab:
    # Read again: a save in this very run named the worksheet, and the exports offered now carry that name.
    render_share(worksheet_state.get(), set(worksheet_state.BUILTIN), problem)
