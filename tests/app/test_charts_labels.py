"""Chart labels that must not print over each other, and log axes that must stay readable (issue 28).

Each test builds a figure from data that used to collide and checks the geometry of what the figure asks Plotly to
draw: every text label's box, estimated here on a nominal plot area from the annotation's position, anchors and
shifts (not with the code under test), overlaps no other label and no marker. The estimate is deliberately a
little generous (7 px per character of the 12 px font, 16 px a line, a narrow plot area), so labels that only just
clear each other here clear each other on the page. Log axes must carry explicit ticks at 1-2-5 × 10^k.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from planner.capacity.warmpool import keep_warm_tradeoff
from ttft_planner_app.charts.capacity import projection_figure, tradeoff_figure
from ttft_planner_app.charts.logs import cold_curve_figure
from ttft_planner_app.charts.sweep import sweep_figure
from ttft_planner_app.charts.whatif import cost_vs_p95_figure, hourly_p95_figure

CHAR_PX, LINE_PX = 7.0, 16.0


@dataclass(frozen=True)
class Rect:
    left: float
    bottom: float
    right: float
    top: float
    what: str

    def overlaps(self, o: Rect) -> bool:
        return self.left < o.right and o.left < self.right and self.bottom < o.top and o.bottom < self.top


class Plot:
    """A nominal plot area over data ranges as Plotly's autorange draws them (the data's span, padded ~5%)."""

    def __init__(self, xs, ys, *, width: float, height: float, x_log=False, y_log=False) -> None:
        self.width, self.height, self.x_log, self.y_log = width, height, x_log, y_log
        self.x_range = self._range(xs, x_log)
        self.y_range = self._range(ys, y_log)

    @staticmethod
    def _range(values, log: bool) -> tuple[float, float]:
        v = [math.log10(x) if log else float(x) for x in values]
        lo, hi = min(v), max(v)
        pad = (hi - lo) * 0.05 or 1.0
        return lo - pad, hi + pad

    def px(self, value: float, axis: str, *, already_log: bool = False) -> float:
        lo, hi = self.x_range if axis == "x" else self.y_range
        log = self.x_log if axis == "x" else self.y_log
        v = value if (already_log or not log) else math.log10(value)
        return (v - lo) / (hi - lo) * (self.width if axis == "x" else self.height)

    def marker(self, x: float, y: float, size: float) -> Rect:
        cx, cy = self.px(x, "x"), self.px(y, "y")
        return Rect(cx - size / 2, cy - size / 2, cx + size / 2, cy + size / 2, f"marker at {x:g}, {y:g}")

    def label(self, ann: dict) -> Rect:
        """The box an annotation's text takes: its anchor point (data, or a fraction for '… domain' refs),
        moved by xshift/yshift or by the arrow's tail (ax, ay; ay counts downwards), anchored by xanchor/yanchor."""

        def at(axis: str) -> float:
            ref = ann.get(f"{axis}ref") or axis
            value = ann[axis]
            if ref.endswith("domain"):
                return value * (self.width if axis == "x" else self.height)
            return self.px(value, axis, already_log=True)  # annotations on a log axis are given as log10

        lines = str(ann["text"]).split("<br>")
        w, h = max(len(s) for s in lines) * CHAR_PX, len(lines) * LINE_PX
        cx, cy = at("x"), at("y")
        if ann.get("showarrow"):
            cx, cy = cx + ann.get("ax", 0), cy - ann.get("ay", 0)
        cx, cy = cx + (ann.get("xshift") or 0), cy + (ann.get("yshift") or 0)
        xa = ann.get("xanchor") or "center"
        ya = ann.get("yanchor") or "middle"
        if ann.get("showarrow"):  # the arrow's tail sits in the middle of the text when anchored there
            xa = "center" if xa == "auto" else xa
            ya = "middle" if ya == "auto" else ya
        left = {"left": cx, "center": cx - w / 2, "right": cx - w}[xa]
        bottom = {"bottom": cy, "middle": cy - h / 2, "top": cy - h}[ya]
        return Rect(left, bottom, left + w, bottom + h, f"label {ann['text']!r}")


def annotations(fig) -> list[dict]:
    return [a.to_plotly_json() for a in fig.layout.annotations]


def assert_apart(rects: list[Rect]) -> None:
    for i, a in enumerate(rects):
        for b in rects[i + 1 :]:
            if a.what.startswith("label") or b.what.startswith("label"):
                assert not a.overlaps(b), f"{a.what} overlaps {b.what}: {a} / {b}"


def assert_inside(rects: list[Rect], plot: Plot, slack: float = 2.0) -> None:
    for r in rects:
        assert r.left >= -slack and r.right <= plot.width + slack, f"{r.what} runs off the side: {r}"
        assert r.bottom >= -slack and r.top <= plot.height + slack, f"{r.what} runs off the top or bottom: {r}"


# --- sweep: the knee's label and the p95 target's label ---------------------------------------------------------


def _steps(p95: list[float]) -> pd.DataFrame:
    p95a = np.asarray(p95, dtype=float)
    return pd.DataFrame(
        {
            "load": [1, 2, 4, 8],
            "ttft_p50_ms": p95a * 0.6,
            "ttft_p95_ms": p95a,
            "ttft_p99_ms": p95a * 1.5,
            "n_ok": [10] * 4,
        }
    )


@pytest.mark.parametrize(
    ("p95", "target", "knee"),
    [
        ([300, 350, 600, 790], 800, 8),  # knee at the last step, target near the top: both labels wanted top right
        ([300, 350, 790, 1500], 800, 4),  # knee in the middle
        ([300, 900, 1500, 2500], 400, 1),  # knee at the first step, target low
        ([100, 120, 150, 200], 190, 8),  # the target above every p95 but p99
    ],
)
@pytest.mark.parametrize("width", [420.0, 900.0])
def test_the_sweep_knee_and_target_labels_keep_apart(p95, target, knee, width):
    steps = _steps(p95)
    fig = sweep_figure(steps, unit="requests/s", target_p95_ms=target, knee_load=knee)
    ys = [*steps["ttft_p50_ms"], *steps["ttft_p99_ms"], target]
    plot = Plot([*steps["load"], knee], ys, width=width, height=320)
    anns = annotations(fig)
    assert len(anns) == 2
    labels = [plot.label(a) for a in anns]
    assert_apart(labels)
    assert_inside(labels, plot, slack=4.0)


# --- What-if: candidate names around the star ------------------------------------------------------------------


def _candidates(rows: list[tuple[str, float, float, bool, bool]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["candidate", "p95_ms", "usd_per_day", "cheapest", "meets_target"])


@pytest.mark.parametrize(
    ("rows", "target"),
    [
        # two candidates at nearly the same p95 and cost, the cheaper starred: their names collided on the star
        (
            [
                ("serverless 4×8", 300, 40, True, True),
                ("dedicated 2×8", 320, 41, False, True),
                ("big", 20000, 300, False, False),
            ],
            500,
        ),
        ([("sls", 207, 5, True, True), ("ded", 210, 153.6, False, True), ("slow", 1373, 12, False, False)], 500),
        # four close together around the target's line
        (
            [
                ("a", 480, 10, True, True),
                ("b", 490, 10.5, False, True),
                ("c", 510, 10.2, False, False),
                ("d", 495, 9.8, False, True),
            ],
            500,
        ),
    ],
)
def test_what_if_candidate_names_clear_the_star_and_each_other(rows, target):
    table = _candidates(rows)
    fig = cost_vs_p95_figure(table, target)
    trace = fig.data[0]
    assert "text" not in trace.mode, "names drawn as marker text are placed by Plotly over their neighbours"
    x_log = fig.layout.xaxis.type == "log"
    plot = Plot([*table["p95_ms"], target], table["usd_per_day"], width=700, height=260, x_log=x_log)
    anns = annotations(fig)
    assert sorted(a["text"] for a in anns) == sorted(table["candidate"])
    markers = [
        plot.marker(x, y, s) for x, y, s in zip(table["p95_ms"], table["usd_per_day"], trace.marker.size, strict=True)
    ]
    labels = [plot.label(a) for a in anns]
    assert_apart([*markers, *labels])
    assert_inside(labels, plot)


# --- Capacity: keep-warm windows ---------------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["trace", "poisson"])
def test_keep_warm_window_labels_keep_apart_and_name_every_window(source):
    """Windows from 300 s up cost about the same as always-warm and share its p95: their markers sit on one spot,
    and their labels printed over each other ("3600 s" over "always warm")."""
    rng = np.random.default_rng(1)
    traffic = (
        {"arrival_ms": np.sort(rng.uniform(0, 8 * 3_600_000, 400))}
        if source == "trace"
        else {"arrivals_per_hour": 50.0}
    )
    trade = keep_warm_tradeoff(
        node_usd_per_hour=3.2, warm_ttft_p95_ms=400, cold_start_ms=20_000, service_ms=2000, **traffic
    )
    fig = tradeoff_figure(trade)
    assert fig.data[0].mode == "markers"
    plot = Plot(trade["keep_warm_usd_per_month"], trade["p95_ttft_ms"], width=480, height=260)
    anns = annotations(fig)
    markers = [
        plot.marker(x, y, 10) for x, y in zip(trade["keep_warm_usd_per_month"], trade["p95_ttft_ms"], strict=True)
    ]
    labels = [plot.label(a) for a in anns]
    assert_apart([*markers, *labels])
    assert_inside(labels, plot)
    # every window is named: on its own label, or inside a range label ("300 s – 3600 s, always warm")
    texts = [a["text"] for a in anns]
    for w in trade["window_s"]:
        if math.isinf(w):
            assert sum("always warm" in t for t in texts) == 1
            continue
        named = [t for t in texts if f"{w:g} s" in t]
        ranged = []
        for t in texts:
            lo_hi = t.split(",")[0]
            if "–" in lo_hi:
                lo, hi = (float(p.strip().removesuffix(" s")) for p in lo_hi.split("–"))
                if lo <= w <= hi:
                    ranged.append(t)
        assert len(named) + len(ranged) >= 1, f"window {w:g} s has no label in {texts}"


def test_keep_warm_windows_far_apart_each_keep_their_own_label():
    trade = pd.DataFrame(
        {
            "option": ["a", "b", "c"],
            "window_s": [10.0, 60.0, math.inf],
            "cold_fraction": [0.5, 0.2, 0.0],
            "keep_warm_usd_per_month": [100.0, 900.0, 2300.0],
            "p95_ttft_ms": [20400.0, 20400.0, 400.0],
            "cold_in_p95": [True, True, False],
        }
    )
    assert sorted(a["text"] for a in annotations(tradeoff_figure(trade))) == ["10 s", "60 s", "always warm"]


# --- log axes: ticks at 1-2-5 × 10^k, never Plotly's crowded minor labels --------------------------------------


def _assert_readable_log_axis(axis, values: list[float]) -> None:
    assert axis.type == "log"
    assert axis.tickmode == "array", "a log axis left to Plotly labels every minor tick (7 8 9 10 2 3 …)"
    ticks = list(axis.tickvals)
    assert 2 <= len(ticks) <= 12, ticks
    for v in ticks:
        mantissa = v / 10 ** math.floor(math.log10(v) + 1e-9)
        assert round(mantissa, 6) in (1.0, 2.0, 5.0), f"tick {v:g} is not 1, 2 or 5 × 10^k"
    assert len(axis.ticktext) == len(ticks)
    assert all(len(t) <= 4 for t in axis.ticktext), axis.ticktext
    # labels at least a factor 2 apart: on any plot width they cannot crowd
    assert all(b / a >= 2 for a, b in zip(ticks, ticks[1:], strict=False)), ticks
    shown_lo, shown_hi = (10**r for r in axis.range) if axis.range else (min(values), max(values))
    assert sum(shown_lo <= t <= shown_hi for t in ticks) >= 2, (ticks, values)


def test_the_what_if_hourly_log_axis_has_1_2_5_ticks():
    hourly = pd.DataFrame(
        [
            {"candidate": c, "hour": h, "p95_ms": v * (1 + h / 30), "n": 30, "p95_reliable": True}
            for c, v in (("a", 200), ("b", 9000))
            for h in range(24)
        ]
    )
    fig = hourly_p95_figure(hourly, 500, "UTC", 0.8)
    _assert_readable_log_axis(fig.layout.yaxis, [*hourly["p95_ms"], 500])


def test_the_what_if_cost_log_axis_has_1_2_5_ticks():
    table = _candidates([("a", 300, 40, True, True), ("b", 20000, 300, False, False)])
    fig = cost_vs_p95_figure(table, 500)
    _assert_readable_log_axis(fig.layout.xaxis, [300, 20000, 500])


@pytest.mark.parametrize("sizes", [[8, 70, 405, 671, 1000], [60, 70, 80], [1, 10_000_000]])
def test_the_weight_projection_log_axes_have_1_2_5_ticks(sizes):
    table = pd.DataFrame(
        {"params_b": sizes, "checkpoint_gb": sizes, "fast (5.00 GB/s)": [s / 5 for s in sizes], "slow": sizes}
    )
    fig = projection_figure(table)
    _assert_readable_log_axis(fig.layout.xaxis, sizes)
    _assert_readable_log_axis(fig.layout.yaxis, [s / 5 for s in sizes] + sizes)


def test_the_cold_exposure_log_axis_has_1_2_5_ticks():
    windows = [1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600]
    cold = pd.DataFrame(
        {
            "window_s": windows,
            "trace_cold_fraction": np.linspace(0.9, 0.01, 10),
            "poisson_cold_fraction": np.linspace(0.95, 0.02, 10),
        }
    )
    fig = cold_curve_figure(cold)
    _assert_readable_log_axis(fig.layout.xaxis, windows)


def test_the_what_if_band_with_an_unbounded_top_keeps_a_finite_axis():
    """A candidate that cannot keep up at its slower speeds has an interval without a top: the band reaches the
    plot's top (1.5 × the highest finite value), its hover says "unbounded", and nothing infinite reaches Plotly."""
    import json
    import math

    from tests.app.conftest import plotly_array

    hourly = pd.DataFrame(
        [
            {"candidate": "a", "hour": h, "p95_ms": 400.0, "n": 30, "p95_reliable": True, "p95_lo_ms": 300.0}
            | {"p95_hi_ms": math.inf if h == 10 else 600.0}
            for h in (9, 10, 11)
        ]
    )
    fig = hourly_p95_figure(hourly, 500, "UTC", 0.9)
    spec = json.loads(fig.to_json())
    ys = [float(y) for t in spec["data"] for y in plotly_array(t["y"])]
    assert ys and all(math.isfinite(y) for y in ys)
    [shade] = [t for t in fig.data if t.fill == "toself"]
    assert max(shade.y) == 600 * 1.5  # the plot's top, not infinity
    assert "10:00 · 90% interval 300 ms – unbounded" in shade.text
    line = next(t for t in fig.data if t.name == "a")
    assert [row[1] for row in line.customdata] == ["300–600 ms", "300 ms – unbounded", "300–600 ms"]
    assert "90% interval" in fig.layout.title.text  # the level passed in, not a fixed 80 %
    # on a log axis too (values spanning more than 20×), the ticks stay finite
    wide = pd.concat([hourly, hourly.assign(candidate="b", p95_ms=20_000.0, p95_lo_ms=15_000.0, p95_hi_ms=math.inf)])
    axis = hourly_p95_figure(wide, 500, "UTC", 0.8).layout.yaxis
    assert axis.type == "log" and all(math.isfinite(v) for v in axis.tickvals)
