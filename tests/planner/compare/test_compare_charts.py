"""The comparison's Plotly builders (pure): hour-of-day overlay with sparse hours marked, CI bars, phases."""

import pandas as pd

from planner.compare.bootstrap import Interval
from planner.compare.charts import hourly_p95_figure, p95_interval_figure, phases_figure


def _hourly():
    rows = [
        {"endpoint": "b", "hour": h, "p50_ms": 500.0, "p95_ms": 800.0 + h, "n": 40, "error_rate": 0.0, "reliable": True}
        for h in range(24)
    ]
    rows += [
        {
            "endpoint": "a",
            "hour": h,
            "p50_ms": 250.0,
            "p95_ms": 400.0,
            "n": 40 if h < 20 else 5,
            "error_rate": 0.0,
            "reliable": h < 20,
        }
        for h in range(24)
    ]
    return pd.DataFrame(rows)


def test_hourly_overlay_draws_one_line_per_endpoint_and_marks_sparse_hours():
    fig = hourly_p95_figure(_hourly(), "Europe/Berlin", order=["a", "b"])
    names = [t.name for t in fig.data]
    assert names == ["a", "a (n < 20)", "b"]  # ranking order, so colours match the other charts
    assert list(fig.data[0].x) == list(range(20)) and list(fig.data[1].x) == [20, 21, 22, 23]
    assert list(fig.data[2].y)[23] == 823.0
    assert fig.layout.xaxis.title.text == "hour of day (Europe/Berlin)"


def test_interval_chart_error_bars_span_the_bootstrap_interval_and_fade_small_n():
    fig = p95_interval_figure(
        {
            "b": Interval(0.95, 900.0, 850.0, 960.0, 400, 0.95, 2000),
            "a": Interval(0.95, 450.0, 430.0, 470.0, 12, 0.95, 2000),
            "none": Interval(0.95, None, None, None, 0, 0.95, 2000),
        },
        order=["a", "b"],
    )
    [trace] = fig.data
    assert list(trace.y) == ["a", "b"]
    assert list(trace.error_x.array) == [20.0, 60.0] and list(trace.error_x.arrayminus) == [20.0, 50.0]
    assert list(trace.marker.opacity) == [0.35, 1.0]


def test_phase_chart_has_a_bar_group_per_endpoint_in_wire_order():
    table = pd.DataFrame(
        [
            {
                "endpoint": "a",
                "dns_p50_ms": 2.0,
                "connect_p50_ms": 20.0,
                "tls_p50_ms": 45.0,
                "headers_p50_ms": 180.0,
                "first_event_p50_ms": 270.0,
                "ttft_p50_ms": 300.0,
                "first_content_p50_ms": None,
            }
        ]
    )
    [bar] = phases_figure(table).data
    assert list(bar.x) == ["DNS", "Connect", "TLS", "Headers", "First event", "First token", "First visible content"]
    assert list(bar.y)[:6] == [2.0, 20.0, 45.0, 180.0, 270.0, 300.0] and list(bar.y)[6] is None
