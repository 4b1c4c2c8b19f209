"""Logs: how long are our prompts, how cached, when do they arrive? (p95 prompt tokens, cache-hit rate, cold exposure)

The page lays out its parts, one module each in app/views/logs_tabs/: the picker and the read options, the source on
show and its column mapping, the headline with the hand-off to the worksheet, five tabs, and the stored uploads. A
production source (the LiteLLM proxy's requests, synced on the Sources page) is read like a stored upload.
"""

import streamlit as st

from ttft_planner_app import viewer
from ttft_planner_app.cache import engine
from ttft_planner_app.views.logs_tabs import (
    cold,
    headline,
    mapping,
    models,
    options,
    picker,
    prompt,
    source,
    stored,
    traffic,
    ttft,
)

st.title("Logs")
st.caption(
    "Upload your agent's request logs (CSV, JSON Lines, JSON or Parquet, optionally .gz/.zst) or a public trace "
    "(Azure 2023/2024, BurstGPT, Mooncake). Prompt-token percentiles over the working day, the cached share, traffic "
    "by hour and the cold-start exposure of a scale-to-zero deployment. Only times, token counts and model names are "
    "kept: prompt and completion text never leave the parser."
)
eng = engine()
tz = viewer.time_zone()  # hours, working day and dates on this page: the one viewer zone

files, uploads, sources = picker.render(eng)
opts = options.render(tz)
shown = source.current(files)
reading = source.read(eng, shown, opts, uploads, sources)
mapping.render(reading)
frame, summary = headline.render(eng, reading.key, opts.workday, tz)

t_prompt, t_traffic, t_cold, t_ttft, t_models = st.tabs(
    ["Prompt tokens", "Traffic", "Cold-start exposure", "Production TTFT", "Per model"]
)
with t_prompt:
    prompt.render(frame, summary, tz)
with t_traffic:
    traffic.render(summary, tz)
with t_cold:
    cold.render(summary)
with t_ttft:
    ttft.render(eng, summary, tz)
with t_models:
    models.render(summary)

stored.render(eng, uploads)
