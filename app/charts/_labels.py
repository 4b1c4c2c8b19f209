"""Label geometry shared by the figure builders: point labels that do not overlap, readable log-axis ticks.

Plotly places a point's text where it is told and never moves it out of another's way, so labels of points close
together (two candidates at nearly the same cost and p95, scale-down windows whose cost is the same) print over each
other and over the markers. `place_labels` chooses each label's side from the data instead: it estimates, on a
nominal plot area, the box each label would take and puts it on the first side (above, below, right, left, then
further above or below) that clears the markers and the labels already placed.

A log axis left to Plotly labels every minor tick ("7 8 9 10 2 3 …"); `log_ticks` gives explicit ticks at 1-2-5 per
decade (only the powers of ten over wide spans) with short text ("200", "5k").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["CHAR_PX", "LINE_PX", "Box", "log_ticks", "place_labels", "plot_px", "tick_text"]

#: Width of one character of Plotly's default 12 px font, a little over the average, and the height of a line.
CHAR_PX = 7.0
LINE_PX = 16.0
#: Room kept between a marker and its label, and between two labels.
GAP_PX = 3.0


@dataclass(frozen=True)
class Box:
    """A rectangle in pixels on the plot area: x grows to the right, y grows upwards (as the data does)."""

    left: float
    bottom: float
    right: float
    top: float

    def overlaps(self, other: Box) -> bool:
        return (
            self.left < other.right and other.left < self.right and self.bottom < other.top and other.bottom < self.top
        )

    def inside(self, width: float, height: float, margin: float = 4.0) -> bool:
        """Within the plot area, `margin` px from its edges (where the estimate of the axis range may be off)."""
        return (
            self.left >= margin
            and self.bottom >= margin
            and self.right <= width - margin
            and self.top <= height - margin
        )


def _axis_fraction(values: Sequence[float], log: bool) -> list[float]:
    """Each value's place along an autoscaled axis (0 = one end, 1 = the other), with Plotly's ~5% padding."""
    v = [math.log10(x) if log else float(x) for x in values]
    lo, hi = min(v), max(v)
    span = hi - lo
    if span <= 0:
        return [0.5] * len(v)
    pad = span * 0.06
    return [(x - lo + pad) / (span + 2 * pad) for x in v]


def plot_px(
    xs: Sequence[float], ys: Sequence[float], *, x_log: bool, y_log: bool, width_px: float, height_px: float
) -> tuple[list[float], list[float]]:
    """Where each point lands, in pixels, on an autoscaled `width_px` × `height_px` plot area."""
    return (
        [f * width_px for f in _axis_fraction(xs, x_log)],
        [f * height_px for f in _axis_fraction(ys, y_log)],
    )


def _text_size(text: str) -> tuple[float, float]:
    lines = text.split("<br>")
    return max(len(line) for line in lines) * CHAR_PX, len(lines) * LINE_PX


# A side: (xanchor, yanchor, xshift, yshift) as multiples of the marker radius + gap and, for the stacked sides,
# of a line's height.
_SIDES: tuple[tuple[str, str, int, int], ...] = (
    ("center", "bottom", 0, 1),  # above
    ("center", "top", 0, -1),  # below
    ("left", "middle", 1, 0),  # right
    ("right", "middle", -1, 0),  # left
    ("left", "bottom", 1, 1),  # above right
    ("right", "bottom", -1, 1),  # above left
    ("left", "top", 1, -1),  # below right
    ("right", "top", -1, -1),  # below left
)


def _box(cx: float, cy: float, w: float, h: float, xanchor: str, yanchor: str) -> Box:
    left = {"left": cx, "center": cx - w / 2, "right": cx - w}[xanchor]
    bottom = {"bottom": cy, "middle": cy - h / 2, "top": cy - h}[yanchor]
    return Box(left, bottom, left + w, bottom + h)


def _choose(
    x: float, y: float, w: float, h: float, r: float, taken: list[Box], width_px: float, height_px: float
) -> dict | None:
    """The first side of point (x, y) where a w × h label fits inside the plot clear of `taken`: next to the
    point (r away), else stacked further above or below it with a leader line; None when there is none."""
    for xa, ya, sx, sy in _SIDES:
        box = _box(x + sx * r, y + sy * r, w, h, xa, ya)
        if box.inside(width_px, height_px) and not any(box.overlaps(t) for t in taken):
            return {"xanchor": xa, "yanchor": ya, "xshift": sx * r, "yshift": sy * r, "box": box}
    for k in range(1, 12):
        for sign in (1, -1):
            ay = sign * (r + k * (h + GAP_PX))
            for xa in ("center", "left", "right"):  # off-centre where the centred text would leave the plot
                box = _box(x, y + ay, w, h, xa, "bottom" if sign > 0 else "top")
                if box.inside(width_px, height_px) and not any(box.overlaps(t) for t in taken):
                    return {"xanchor": xa, "yanchor": "middle", "ay": ay, "box": box}
    return None


def place_labels(
    xs: Sequence[float],
    ys: Sequence[float],
    texts: Sequence[str],
    *,
    marker_px: Sequence[float] | float = 10.0,
    x_log: bool = False,
    y_log: bool = False,
    width_px: float = 500.0,
    height_px: float = 260.0,
    vlines: Sequence[float] = (),
) -> list[dict]:
    """Plotly annotations (data coordinates) labelling each point with its text, none overlapping another or a
    marker on a `width_px` × `height_px` plot area (the narrowest the page draws the chart at).

    `vlines` are x positions of full-height lines (a target) that labels keep clear of too where there is room
    (a label may cross one, never another label); they count in the x range, as Plotly's autorange counts them.
    Labels are placed in the order given, so the most important first.
    A label that finds no free side nearby is stacked further above or below its point with a leader line. An empty
    text places nothing.
    """
    n = len(xs)
    sizes = [float(marker_px)] * n if isinstance(marker_px, int | float) else [float(s) for s in marker_px]
    px = [f * width_px for f in _axis_fraction([*xs, *vlines], x_log)] if n else []
    py = [f * height_px for f in _axis_fraction(ys, y_log)] if n else []
    lines = [Box(x - 1, 0, x + 1, height_px) for x in px[n:]]
    taken = [
        Box(px[i] - sizes[i] / 2, py[i] - sizes[i] / 2, px[i] + sizes[i] / 2, py[i] + sizes[i] / 2) for i in range(n)
    ]
    out: list[dict] = []
    for i in range(n):
        if not texts[i]:
            continue
        w, h = _text_size(texts[i])
        r = sizes[i] / 2 + GAP_PX
        # clear of the lines too where there is room; else across a line (readable), never over a label or marker
        chosen = _choose(px[i], py[i], w, h, r, [*taken, *lines], width_px, height_px) or _choose(
            px[i], py[i], w, h, r, taken, width_px, height_px
        )
        if chosen is None:  # nowhere inside the plot: above it, as Plotly would
            chosen = {"xanchor": "center", "yanchor": "bottom", "xshift": 0, "yshift": r}
        box = chosen.pop("box", None)
        if box is not None:
            taken.append(box)
        ann: dict = {
            "x": math.log10(xs[i]) if x_log else xs[i],  # Plotly reads annotation positions on log axes as log10
            "y": math.log10(ys[i]) if y_log else ys[i],
            "text": texts[i],
            "xanchor": chosen["xanchor"],
            "yanchor": chosen["yanchor"],
        }
        if "ay" in chosen:
            # ay counts pixels downwards; the label's centre sits half a line further from the point
            h_half = h / 2
            centre = chosen["ay"] + (h_half if chosen["ay"] > 0 else -h_half)
            ann.update(showarrow=True, ax=0, ay=-centre, arrowwidth=1, arrowcolor="#9e9e9e", standoff=sizes[i] / 2)
        else:
            ann.update(showarrow=False, xshift=chosen["xshift"], yshift=chosen["yshift"])
        out.append(ann)
    return out


def tick_text(v: float) -> str:
    """A tick value as the eye reads it: 0.5, 20, 500, 2k, 10k, 1M."""
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if v >= div:
            return f"{v / div:g}{suffix}"
    return f"{v:g}"


def log_ticks(values: Sequence[float]) -> dict:
    """Axis settings for a log axis over `values` (positive ones count): ticks at 1, 2 and 5 times each power of
    ten over up to three decades, at the powers of ten only over wider spans (every other one past six decades),
    each labelled with `tick_text`. When fewer than two such ticks fall inside the data, the range is widened to
    the nearest ones around it, so an axis never shows a single label or none."""
    pos = [float(v) for v in values if v is not None and math.isfinite(v) and v > 0]
    if not pos:
        return {"type": "log"}
    lo, hi = min(pos), max(pos)
    d_lo, d_hi = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    decades = d_hi - d_lo
    mantissas = (1, 2, 5) if decades <= 3 else (1,)
    step = 2 if decades > 6 else 1
    every = [m * 10.0**d for d in range(d_lo - 1, d_hi + 1) for m in mantissas if (d - d_lo) % step == 0]
    every = sorted({float(f"{v:.6g}") for v in every})
    inside = [v for v in every if lo <= v <= hi]
    settings: dict = {"type": "log"}
    if len(inside) < 2:
        below = max((v for v in every if v <= lo), default=every[0])
        above = min((v for v in every if v >= hi and v > below), default=every[-1])
        inside = [v for v in every if below <= v <= above]
        settings["range"] = [math.log10(below) - 0.02, math.log10(above) + 0.02]
    settings.update(tickmode="array", tickvals=inside, ticktext=[tick_text(v) for v in inside])
    return settings
