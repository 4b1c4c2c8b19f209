"""Regions › Your own targets: add a host (optionally probed by the worker on a schedule), list and remove them."""

import pandas as pd
import streamlit as st
from sqlalchemy.engine import Engine

from planner.inputs.untrusted import md_text
from planner.inputs.validate import LATITUDE_DEG, LONGITUDE_DEG, RTT_INTERVAL_S
from planner.regions.catalog import CatalogError, parse_target
from planner.regions.rtt_history import TargetExists, TargetNotFound, add_target, list_targets, remove_target
from ttft_planner_app.auth import can, record, require
from ttft_planner_app.store_errors import STORE_FAILURES, show_store_failure
from ttft_planner_app.widgets import number_input_for

__all__ = ["render"]


def render(eng: Engine) -> None:
    """Draw the expander with the add-target form and the stored targets."""
    ss = st.session_state
    # ---- the user's own targets
    with st.expander("Your own targets (custom hosts and scheduled probes)"):
        with st.form("rtt_add_target", clear_on_submit=True):
            a1, a2 = st.columns(2)
            new_id = a1.text_input("Id", placeholder="acme-eu-west")
            new_target = a2.text_input("URL or host:port", placeholder="https://eu.api.acme.dev/health")
            b1, b2, b3, b4 = st.columns(4)
            new_lat = number_input_for(LATITUDE_DEG, "Latitude", value=None, key="rtt_new_lat", where=b1)
            new_lon = number_input_for(LONGITUDE_DEG, "Longitude", value=None, key="rtt_new_lon", where=b2)
            schedule = b3.checkbox("Scheduled by the worker", value=True)
            interval = number_input_for(RTT_INTERVAL_S, "Every (s)", value=300, key="rtt_new_every", where=b4)
            if st.form_submit_button("Add target", disabled=not can("region.write")) and require("region.write"):
                try:
                    parse_target(new_target)
                    if (new_lat is None) != (new_lon is None):
                        raise ValueError("give both latitude and longitude, or neither")
                    add_target(
                        eng, new_id, new_target, lat=new_lat, lon=new_lon, enabled=schedule, interval_s=float(interval)
                    )
                    record("region.write", new_id, f"added RTT target {new_target}")
                    then = (
                        f": the worker probes it every {interval:,g} s."
                        if schedule
                        else "; pick it under Regions to measure."
                    )
                    ss.rtt_flash = f"Added target “{new_id}”{then}"
                    st.rerun()
                except (CatalogError, TargetExists, ValueError) as exc:
                    st.error(f"Target not added: {md_text(exc)}")
                except STORE_FAILURES as exc:
                    show_store_failure(exc)
        stored = list_targets(eng)
        if stored:
            table = pd.DataFrame(
                [
                    {
                        "Id": t.region_id,
                        "Target": t.target,
                        "Scheduled": "yes" if t.enabled else "no",
                        "Every (s)": f"{t.interval_s:,.0f}",
                        "Vantage": t.vantage or "any",
                    }
                    for t in stored
                ]
            )
            st.dataframe(table, hide_index=True, key="rtt_targets_table")
            gone = st.selectbox("Remove target", [t.region_id for t in stored], key="rtt_remove_pick")
            if st.button("Remove", key="rtt_remove", disabled=not can("region.write")) and require("region.write"):
                try:
                    remove_target(eng, gone)
                    record("region.write", gone, "removed RTT target")
                    ss.rtt_flash = f"Removed target “{gone}” (its stored samples are kept)."
                except TargetNotFound as exc:
                    st.error(md_text(exc))
                except STORE_FAILURES as exc:
                    show_store_failure(exc)
                st.rerun()
