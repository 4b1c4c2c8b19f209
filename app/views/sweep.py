"""Sweep: TTFT under load, step by step, from `ttft-planner sweep --store` runs (issue 14)."""

import json

import streamlit as st

from planner import present
from planner.inputs.untrusted import md_text
from planner.percentiles import min_n_for
from planner.settings import vantage_name
from planner.sweep import knee_caveat, knee_sentence, load_words, queueing_p95_ms, thin_percentiles
from planner.sweep.history import load_sweep_runs, load_sweep_steps
from ttft_planner_app import worksheet_state
from ttft_planner_app.cache import engine
from ttft_planner_app.charts.sweep import sweep_figure
from ttft_planner_app.viewer import fmt_ms
from ttft_planner_app.widgets import wrapped_table

st.title("Load sweep")
st.caption(
    "TTFT at increasing load: open-loop arrivals at a list of rates (Poisson or constant), or a list of concurrencies. "
    "The knee is the last load whose p95 stays within the target — the measured queueing curve of that endpoint. "
    "Run one with `ttft-planner sweep --base-url … --model … --rates 1,2,4,8 --target-p95-ms 800 --store`."
)
eng = engine()
runs = load_sweep_runs(eng)
if runs.empty:
    st.info(
        "No sweeps stored yet. Run `ttft-planner sweep … --store` against an endpoint (or the built-in simulator: "
        "`ttft-planner simulate`), then come back."
    )
    st.stop()


def _missing(v) -> float | None:
    return None if present.is_missing(v) else float(v)


def _run_label(r) -> str:
    unit = "concurrent" if r.mode == "concurrency" else "req/s"
    knee_load, over_load = _missing(r.knee_load), _missing(r.over_load)
    knee = (
        "no target"
        if present.is_missing(r.target_p95_ms)
        else "over the target at once"
        if knee_load is None
        else f"knee not reached (≥ {knee_load:g} {unit})"
        if over_load is None
        else f"knee {knee_load:g} {unit}"
    )
    return f"#{r.id} · {r.model} at {r.base_url} · {r.mode} · {knee} · {fmt_ms(r.started_at_ms)}"


labels = {int(r.id): _run_label(r) for r in runs.itertuples()}
run_id = st.selectbox("Sweep run", list(labels), format_func=lambda i: labels[i], key="sweep_run")
run = runs[runs["id"] == run_id].iloc[0]
steps = load_sweep_steps(eng, run_id)
unit = "concurrent requests" if run["mode"] == "concurrency" else "requests/s"
knee, over = _missing(run["knee_load"]), _missing(run["over_load"])
target = _missing(run["target_p95_ms"])
knee_words = knee_sentence(knee, over, target, run["mode"])
caveat = knee_caveat(knee if over is not None else None, list(steps["load"]), list(steps["n_ok"]), run["mode"])

# two rows of two: "2 requests/s (too few)" is cut in a quarter of the page at 1,400 px
c1, c2 = st.columns(2)
c3, c4 = st.columns(2)
c1.metric(
    "Knee",
    "—"
    if knee is None
    else "not reached"
    if over is None
    else present.too_few(load_words(knee, run["mode"]), not caveat),
    help="The last load whose p95 TTFT stayed within the target: " + knee_words + ".",
)
c2.metric("p95 target", present.ms(target))
c3.metric("Steps", present.count(len(steps)))
c4.metric(
    "Client CPU per request",
    present.ms(run["client_cpu_ms_per_request"], 2),
    help="CPU time of the sweeping process per request: how light the load generator is.",
)
if target is not None and knee is None:
    st.warning("p95 was over the target already at the first step: start the sweep at a lower load.")
elif target is not None:
    st.caption(knee_words[0].upper() + knee_words[1:] + ".")
if caveat:
    st.warning(caveat, icon=":material/hourglass_empty:")
st.plotly_chart(
    sweep_figure(steps, unit=unit, target_p95_ms=target, knee_load=knee if over is not None else None),
    key="sweep_curve",
)

table = steps[
    [
        "load",
        "n_sent",
        "n_ok",
        "ttft_p50_ms",
        "ttft_p95_ms",
        "ttft_p99_ms",
        "error_rate",
        "offered_rps",
        "achieved_rps",
        "send_lag_p95_ms",
        "client_cpu_ms_per_request",
    ]
]
table = table.copy()
thin = [thin_percentiles(int(n)) for n in table["n_ok"]]
for name in ("p50", "p95", "p99"):  # marked as the command marks them: a percentile from too few requests
    col = f"ttft_{name}_ms"
    table[col] = [present.too_few(present.ms(v), name not in t) for v, t in zip(table[col], thin, strict=True)]
wrapped_table(  # every column in view at 1,400 px (a grid of eleven scrolled sideways, its last one cut)
    present.display_frame(
        table,
        {
            "error_rate": present.pct,
            "offered_rps": lambda v: present.rate(v, "req/s", 2),
            "achieved_rps": lambda v: present.rate(v, "req/s", 2),
            "send_lag_p95_ms": lambda v: present.ms(v, 1),
            "client_cpu_ms_per_request": lambda v: present.ms(v, 2),
            "n_sent": present.count,
            "n_ok": present.count,
            "load": lambda v: f"{v:g}",
        },
    )
)
errors = {k: v for e in steps["errors_json"] for k, v in json.loads(e or "{}").items()}
if errors:
    st.caption("Failures by class: " + ", ".join(f"{k} {v}" for k, v in errors.items()))
st.caption(
    f"Provenance: {run['mode']} arrivals, {present.tokens(run['prompt_tokens'])} prompts, "
    f"max {run['max_tokens']} output "
    f"tokens, {present.seconds(run['step_duration_s'])} per step, seed {run['seed']}, measured from "
    f"{md_text(vantage_name(run['vantage']))} with ttft-planner {run['tool_version']}"
    + (f", key from ${run['api_key_env']}" if run["api_key_env"] else "")
    + ". Percentiles are nearest-rank over "
    f"successful requests; {present.TOO_FEW} marks one from fewer requests than it needs (p95 {min_n_for(0.95)}, "
    f"p99 {min_n_for(0.99)}): it is only the largest value seen. Send lag above a few ms means the "
    "client, not the endpoint, was the bottleneck."
)

# ---- the measured queueing curve → the worksheet's admission/queueing segment
st.subheader("Queueing at your load")
ok_steps = steps[steps["ttft_p95_ms"].notna()]
if len(ok_steps) >= 2:
    lo, hi = float(ok_steps["load"].min()), float(ok_steps["load"].max())
    at_load = st.slider(f"Your expected load ({unit})", min_value=lo, max_value=hi, value=lo, key="sweep_at_load")
    fig = queueing_p95_ms(
        list(ok_steps["load"]),
        list(ok_steps["ttft_p95_ms"]),
        at_load,
        detail=f"sweep #{run_id} ({run['model']}): p95 at {load_words(at_load, run['mode'])} minus p95 at "
        f"{load_words(lo, run['mode'])}",
        n=int(ok_steps["n_ok"].sum()),
        measured_at_ms=int(run["finished_at_ms"]),
    )
    st.metric(
        "Queueing p95",
        present.ms(fig.value),
        help="What the load adds to p95 TTFT on this endpoint, "
        "interpolated between the swept steps (never extrapolated).",
    )
    if st.button("Use for worksheet", key="sweep_use", type="primary"):
        worksheet_state.hand_over({"queue_ms": fig})
else:
    st.caption("A queueing figure needs two or more steps with a p95.")
