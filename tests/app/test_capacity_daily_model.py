"""AppTest: Capacity & cost models a log one way on every tab (planner.capacity.traffic's daily model): a 57-minute
trace is one day's traffic, once a day — Break-even prices it once a day and Warm pool keeps the replica warm for
its span, not 24 h a day — and the keep-warm chart's p95 axis starts at 0."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from planner.capacity.cost import HOURS_PER_MONTH
from planner.logs import COLUMNS, LogParseResult
from planner.store import database_url, open_store
from planner.store.logs import save_upload
from tests.app.conftest import open_page, table_with

DAY = 1_780_000_000_000 - 1_780_000_000_000 % 86_400_000


def _seed_57_minutes() -> int:
    start = DAY + 10 * 3_600_000 + 30 * 60_000  # 10:30 UTC, then a request a minute until 11:27
    ts = [start + i * 60_000 for i in range(58)]
    n = len(ts)
    frame = pd.DataFrame(
        {
            "ts_ms": np.array(ts, dtype=np.int64),
            "model": ["m"] * n,
            "prompt_tokens": [990] * n,
            "cached_tokens": [0] * n,
            "output_tokens": [10] * n,
            "ttft_ms": [np.nan] * n,
            "duration_ms": [4000.0] * n,
            "source": ["t"] * n,
        }
    )[list(COLUMNS)]
    eng = open_store(database_url())
    upload_id = save_upload(eng, "hour.jsonl", LogParseResult(requests=frame))
    eng.dispose()
    return upload_id


def test_a_57_minute_trace_is_one_days_traffic_on_every_tab(app):
    upload_id = _seed_57_minutes()
    app.session_state["viewer_tz"] = "UTC"
    open_page("capacity", app)
    app.selectbox(key="cap_traffic").set_value(upload_id).run()
    assert not app.exception, app.exception
    # Break-even: the trace's tokens once a day, 30.4 days a month
    caption = next(c.value for c in app.caption if "tokens/month" in c.value)
    shown_b = float(caption.split("Your traffic: ")[1].split("B tokens/month")[0])
    assert shown_b == round(58 * 1000 * HOURS_PER_MONTH / 24 / 1e9, 2)
    # Warm pool: with W = 300 s the replica is warm for the trace's 57 min + one window a day, not 24 h
    table = table_with(app, "Warm hours per day")
    w300 = table[table["Scale-down window"] == "300 s"].iloc[0]
    assert w300["Warm hours per day"] == "1.0 h"
    node_usd = next(c.value for c in app.caption if "Trace-driven from" in c.value).split("replica cost $")[1]
    per_hour = float(node_usd.split("/h")[0].replace(",", ""))
    expected = (57 * 60 + 4 + 300) / 3600 / 24 * per_hour * HOURS_PER_MONTH
    assert w300["Keep-warm cost per month"] == f"${expected:,.0f}"
    always = table[table["Scale-down window"] == "always warm"].iloc[0]
    assert always["Warm hours per day"] == "24.0 h"
    # The keep-warm chart's p95 axis starts at 0, whatever the spread of the points
    spec = next(json.loads(c.proto.spec) for c in app.get("plotly_chart") if "cap_wp_chart" in (c.proto.id or ""))
    low, high = spec["layout"]["yaxis"]["range"]
    assert low == 0 and high > 500
    model = "The log spans 57 min, in 2 of the 24 hours of day (UTC): taken as one day's traffic"
    # stated once for the page, and by each tab that uses it
    assert sum(model in c.value for c in app.caption) >= 3
