"""Warm pool tab: Erlang C queue wait for a pool of warm replicas, and the keep-warm vs scale-to-zero trade-off."""

import math

import pandas as pd
import streamlit as st

from app.charts.capacity import tradeoff_figure
from planner.capacity.cost import CostInputs
from planner.capacity.errors import CapacityError
from planner.capacity.traffic import LogTraffic
from planner.capacity.warmpool import keep_warm_tradeoff, min_slots_for_target, queue_wait

__all__ = ["render"]


def render(traffic: LogTraffic | None, traffic_id: int, cost_inputs: CostInputs) -> None:
    """Draw the Warm pool tab for `traffic` (None: typed numbers).

    `traffic_id` (the page's traffic choice, 0 for typed numbers) keys the arrival and service inputs, so picking
    another log resets them to that log's figures; `cost_inputs` (the Break-even tab's) price one replica.
    """
    left, right = st.columns([2, 3], gap="large")
    with left:
        default_rate = traffic.peak_arrivals_per_hour if traffic is not None else 30.0
        arrivals = st.number_input("Arrivals per hour (peak hour)", min_value=0.0, value=float(default_rate), persist_state="session", key=f"cap_wp_rate_{traffic_id}",
                                   help="From the log's busiest clock hour when a log is picked.")
        default_service = traffic.mean_service_s if traffic is not None and traffic.mean_service_s else 300.0
        service_s = st.number_input("Mean time a request holds a slot (s)", min_value=0.001, value=float(default_service), persist_state="session", key=f"cap_wp_service_{traffic_id}",
                                    help="TTFT + decode at the target concurrency; from the log's mean duration when logged.")
        c1, c2 = st.columns(2)
        slots_per_rep = c1.number_input("Slots per replica", min_value=1, value=1, persist_state="session", key="cap_wp_spr")
        replicas = c2.number_input("Warm replicas", min_value=1, value=4, persist_state="session", key="cap_wp_reps")
        target_wait = st.number_input("Queue-wait p95 target (s)", min_value=0.0, value=1.0, persist_state="session", key="cap_wp_target")
        st.caption("Scale-to-zero trade-off")
        cold_s = st.number_input("Cold start (s)", min_value=0.0, value=60.0, persist_state="session", key="cap_wp_cold",
                                 help="A cold reading from the Probes page, or the Weight loading projection.")
        warm_p95 = st.number_input("Warm p95 TTFT (ms)", min_value=0.0, value=500.0, persist_state="session", key="cap_wp_warm")
    with right:
        try:
            slots = int(replicas * slots_per_rep)
            qw = queue_wait(arrivals, service_s, slots)
            m1, m2, m3 = st.columns(3)
            m1.metric("P(wait)", f"{qw.wait_probability:.1%}")
            m2.metric("Queue-wait p95", "unbounded" if math.isinf(qw.wait_quantile_s) else f"{qw.wait_quantile_s:,.1f} s")
            need = min_slots_for_target(arrivals, service_s, target_wait)
            m3.metric("Minimum warm replicas", f"{math.ceil(need / slots_per_rep)}", help=f"{need} slots for a queue-wait p95 ≤ {target_wait:g} s")
            (st.success if qw.stable else st.error)(qw.message)
            node_usd = cost_inputs.node_usd_per_hour
            if traffic is not None and traffic.n_requests >= 2:
                trade = keep_warm_tradeoff(node_usd_per_hour=node_usd, warm_ttft_p95_ms=warm_p95, cold_start_ms=cold_s * 1000,
                                           arrival_ms=traffic.arrival_ms, service_ms=float(pd.Series(traffic.service_ms).mean()),
                                           gpus_per_replica=cost_inputs.gpus_per_replica)
                st.caption(f"Trace-driven from {traffic.label}; replica cost ${node_usd:,.2f}/h from the Break-even tab.")
            elif arrivals > 0:
                trade = keep_warm_tradeoff(node_usd_per_hour=node_usd, warm_ttft_p95_ms=warm_p95, cold_start_ms=cold_s * 1000,
                                           arrivals_per_hour=arrivals, service_ms=service_s * 1000, gpus_per_replica=cost_inputs.gpus_per_replica)
                st.caption(f"Poisson arrivals at {arrivals:,.0f}/h (P(cold) = e^(−λW)); replica cost ${node_usd:,.2f}/h from the Break-even tab.")
            else:
                trade = None
                st.info("No traffic: nothing to keep warm; scale-to-zero costs nothing.")
            if trade is not None:
                st.plotly_chart(tradeoff_figure(trade), key="cap_wp_chart")
                st.dataframe(trade.round(2), hide_index=True, column_config={"cold_fraction": st.column_config.NumberColumn(format="percent")})
        except CapacityError as exc:
            st.error(str(exc))
