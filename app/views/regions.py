"""Regions: how far is each candidate region from our people and our servers? (feeds segment 4, network)

The page lays out its three sections, one module each in app/views/regions_sections/: Measure, Results (with the
hand-off to the worksheet) and Your own targets.
"""

import streamlit as st

from planner.regions.catalog import catalog, merge_custom
from planner.regions.rtt_history import list_targets
from ttft_planner_app.cache import engine
from ttft_planner_app.viewer import time_zone
from ttft_planner_app.views.regions_sections import measure, results, targets

st.title("Regions")
st.caption(
    "Round-trip time from your servers and from your people's browsers to each candidate region. "
    "Whatever you cannot remove here is a fixed tax on every request (segment 4 of TTFT)."
)
eng = engine()
if "rtt_flash" in st.session_state:  # a message from the run before a rerun (e.g. "Added target …")
    st.success(st.session_state.pop("rtt_flash"))
regions = merge_custom(catalog(), list_targets(eng))

measure.render(eng, regions)
results.render(eng, regions, time_zone())
targets.render(eng)
