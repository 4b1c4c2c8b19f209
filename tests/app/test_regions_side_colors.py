"""AppTest: the Regions charts give each side of a measurement one colour (the server's and the browser's), the same
on the distribution and on Server vs browser, taken from the theme; the distribution's legend names the sides."""

from __future__ import annotations

import json
import time

from planner.store import open_store
from planner.store.rtt import SampleRecord, insert_rtt_samples
from tests.app.conftest import open_page, plotly_array
from ttft_planner_app.charts import SIDE_COLORS


def _colours(spec: dict) -> dict[str, set[str]]:
    """side → the colours its traces are drawn in."""
    out: dict[str, set[str]] = {}
    for t in spec["data"]:
        out.setdefault(t["name"], set()).add(t["marker"]["color"])
    return out


def test_server_and_browser_keep_their_colour_on_every_chart():
    eng = open_store()
    now = int(time.time() * 1000)
    server = [SampleRecord("aws-eu-west-1", "x", "server", "tcp-connect", 20.0 + i, now, vantage="") for i in range(10)]
    browser = [
        SampleRecord("aws-eu-west-1", "x", "browser", method, 25.0 + i, now, vantage="Berlin")
        for i in range(10)
        for method in ("resource-timing", "fetch-performance-now")
    ]
    insert_rtt_samples(eng, [*server, *browser])
    at = open_page("regions")
    assert not at.exception, at.exception
    specs = {
        key: json.loads(next(c for c in at.get("plotly_chart") if key in c.proto.id).proto.spec)
        for key in ("rtt_distribution", "rtt_server_vs_browser")
    }
    expected = {"server": {SIDE_COLORS["server"]}, "browser": {SIDE_COLORS["browser"]}}
    assert _colours(specs["rtt_distribution"]) == expected  # both browser methods in the browser's colour
    assert _colours(specs["rtt_server_vs_browser"]) == expected
    assert SIDE_COLORS["server"] != SIDE_COLORS["browser"]
    # one legend entry per side: the method is in the hover, not in a legend that grew over the title
    legend = [t["name"] for t in specs["rtt_distribution"]["data"] if t.get("showlegend", True)]
    assert legend == ["browser", "server"]
    assert all(len(plotly_array(t["y"])) == 10 for t in specs["rtt_distribution"]["data"])
