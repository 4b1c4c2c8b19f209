"""Warm pool tab: Erlang C queue wait for a pool of warm replicas, and the keep-warm vs scale-to-zero trade-off."""

import math

import pandas as pd
import streamlit as st

from planner import present
from planner.capacity.cost import CostInputs
from planner.capacity.errors import CapacityError
from planner.capacity.traffic import DAILY_RULE, LogTraffic, daily_words
from planner.capacity.warmpool import KeepWarm, WarmPoolPlan, plan_warm_pool
from planner.inputs.untrusted import md_text
from planner.inputs.validate import ARRIVALS_PER_HOUR, DURATION_MS, DURATION_S, REPLICAS, SERVICE_S, SLOTS
from ttft_planner_app.charts.capacity import tradeoff_figure
from ttft_planner_app.widgets import number_input_for, wrapped_table

__all__ = ["render"]


DEFAULT_SERVICE_S = 30.0  # a chat turn: ~1 s TTFT + ~1,700 tokens at 60 tokens/s
DEFAULT_DECODE_TOKENS_PER_S = 60.0


def _default_service_s(traffic: LogTraffic | None) -> tuple[float, str]:
    """The slot-holding time the tab starts from, and where it comes from (said under the input)."""
    if traffic is not None and traffic.mean_service_s:
        return traffic.mean_service_s, (
            f"the log's mean request duration, {present.seconds(traffic.mean_service_s)} over "
            f"{present.count(traffic.n_durations)} requests with a logged duration"
        )
    if traffic is not None:
        decode_s = traffic.mean_output_tokens / DEFAULT_DECODE_TOKENS_PER_S
        output = f"its mean output ({present.tokens(traffic.mean_output_tokens)}) at {DEFAULT_DECODE_TOKENS_PER_S:g} "
        if traffic.mean_ttft_s:  # a log without first-token times has no TTFT to add: say so, never "0.0 s"
            return max(traffic.mean_ttft_s + decode_s, 0.001), (
                f"the log has no durations: its mean TTFT ({present.seconds(traffic.mean_ttft_s)}) + "
                f"{output}tokens/s decode"
            )
        return max(decode_s, 0.001), (
            f"the log has no durations and no first-token times: {output}tokens/s decode (TTFT not included)"
        )
    return DEFAULT_SERVICE_S, (
        f"{present.seconds(DEFAULT_SERVICE_S, 0)}, a typical chat turn (about 1 s TTFT + 1,700 output tokens "
        f"at {DEFAULT_DECODE_TOKENS_PER_S:g} tokens/s); pick a log on top of the page to derive it"
    )


def render(traffic: LogTraffic | None, traffic_id: int, cost_inputs: CostInputs) -> None:
    """Draw the Warm pool tab for `traffic` (None: typed numbers).

    `traffic_id` (the page's traffic choice, 0 for typed numbers) keys the arrival and service inputs, so picking
    another log resets them to that log's figures; `cost_inputs` (the Break-even tab's) price one replica.
    """
    left, right = st.columns([2, 3], gap="large")
    with left:
        default_rate = traffic.peak_arrivals_per_hour if traffic is not None else 30.0
        arrivals = number_input_for(
            ARRIVALS_PER_HOUR,
            "Arrivals per hour (peak hour)",
            persist=True,
            value=float(default_rate),
            key=f"cap_wp_rate_{traffic_id}",
            help="From the log's busiest clock hour when a log is picked.",
        )
        default_service, service_source = _default_service_s(traffic)
        service_s = number_input_for(
            SERVICE_S,
            "Mean time a request holds a slot (s)",
            persist=True,
            value=float(default_service),
            key=f"cap_wp_service_{traffic_id}",
            help="TTFT + decode at the target concurrency.",
        )
        st.caption(f"Default: {service_source}.")
        c1, c2 = st.columns(2)
        slots_per_rep = number_input_for(SLOTS, "Slots per replica", value=1, key="cap_wp_spr", where=c1, persist=True)
        replicas = number_input_for(REPLICAS, "Warm replicas", value=4, key="cap_wp_reps", where=c2, persist=True)
        target_wait = number_input_for(
            DURATION_S, "Queue-wait p95 target (s)", value=1.0, key="cap_wp_target", persist=True
        )
        st.caption("Scale-to-zero trade-off")
        cold_s = number_input_for(
            DURATION_S,
            "Cold start (s)",
            persist=True,
            value=60.0,
            key="cap_wp_cold",
            help="A cold reading from the Probes page, or the Weight loading projection.",
        )
        warm_p95 = number_input_for(DURATION_MS, "Warm p95 TTFT (ms)", value=500.0, key="cap_wp_warm", persist=True)
    with right:
        try:
            plan = plan_warm_pool(
                arrivals,
                service_s,
                slots_per_replica=int(slots_per_rep),
                replicas=int(replicas),
                target_wait_s=target_wait,
                keep_warm=KeepWarm(
                    replica_usd_per_hour=cost_inputs.node_usd_per_hour,
                    warm_ttft_p95_ms=warm_p95,
                    cold_start_ms=cold_s * 1000,
                    gpus_per_replica=cost_inputs.gpus_per_replica,
                    arrival_ms=traffic.arrival_ms if traffic is not None else None,
                    service_ms=float(pd.Series(traffic.service_ms).mean()) if traffic is not None else None,
                ),
            )
            _show(plan, traffic, cost_inputs.node_usd_per_hour)
        except CapacityError as exc:
            st.error(str(exc))


def _show(plan: WarmPoolPlan, traffic: LogTraffic | None, node_usd: float) -> None:
    """Draw `plan`: the pool's queue figures, the fewest replicas for the target, and the keep-warm trade-off."""
    qw = plan.queue
    assert qw is not None and plan.min_slots is not None  # the tab always gives a pool and a target
    m1, m2, m3 = st.columns(3)
    m1.metric("P(wait)", present.pct(qw.wait_probability))
    m2.metric(
        "Queue-wait p95",
        "∞" if math.isinf(qw.wait_quantile_s) else present.seconds(qw.wait_quantile_s),
        help="∞: the pool is overloaded, the queue grows without bound.",
    )
    m3.metric(
        "Minimum warm replicas",
        present.count(plan.min_replicas),
        help=f"{plan.min_slots} slots for a queue-wait p95 ≤ {plan.target_wait_s:g} s",
    )
    (st.success if qw.stable else st.error)(qw.message)
    if plan.tradeoff is None:
        st.info(plan.tradeoff_note)
        return
    if plan.tradeoff_from_trace:
        assert traffic is not None  # a trace comes from the picked log
        st.caption(
            f"Trace-driven from {md_text(traffic.label)}; "
            f"replica cost ${node_usd:,.2f}/h from the Break-even tab. {daily_words(traffic)} Warm and idle "
            "hours per day are the trace's own ÷ the days it stands for; outside them the replica is scaled "
            "to zero.",
            help=DAILY_RULE,
        )
    else:
        st.caption(
            f"Poisson arrivals at {plan.arrivals_per_hour:,.0f}/h (P(cold) = e^(−λW)); "
            f"replica cost ${node_usd:,.2f}/h from the Break-even tab."
        )
    st.plotly_chart(tradeoff_figure(plan.tradeoff), key="cap_wp_chart")
    wrapped_table(pd.DataFrame(_tradeoff_table(plan.tradeoff)))  # every column in view at 1,400 px, in its half


def _tradeoff_table(trade: pd.DataFrame) -> list[dict]:
    """keep_warm_tradeoff() rows as the user reads them: labelled columns, units, no raw flags."""
    return [
        {
            "Option": r["option"],
            "Scale-down window": "always warm" if math.isinf(r["window_s"]) else present.seconds(r["window_s"], 0),
            "Cold requests": present.pct(r["cold_fraction"]),
            "Warm hours per day": f"{r['warm_hours_per_day']:,.1f} h",
            "Idle GPU-hours per day": f"{r['idle_gpu_hours_per_day']:,.1f} h",
            "Keep-warm cost per month": present.usd(r["keep_warm_usd_per_month"], 0),
            "p95 TTFT": present.ms(r["p95_ttft_ms"]),
            "Cold start in the p95": "yes" if r["cold_in_p95"] else "no",
        }
        for r in trade.to_dict(orient="records")
    ]
