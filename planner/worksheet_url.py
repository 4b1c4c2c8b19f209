"""The worksheet's public URL contract: query-parameter names, defaults and help (one table, like datasette's SETTINGS).

The page binds one widget per row (`bind="query-params"`), so a shared URL
reproduces the same inputs. Custom interaction types travel in `custom`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from urllib.parse import urlencode

from planner.budget import Worksheet
from planner.provenance import Figure

__all__ = ["PARAMS", "Param", "parse_custom", "format_custom", "query_for", "worksheet_from_query"]


@dataclass(frozen=True)
class Param:
    key: str  # query parameter name == widget key
    field: str  # Worksheet field it fills
    unit: str
    help: str


PARAMS: tuple[Param, ...] = (
    Param("target_ms", "target", "ms", "p95 TTFT target for the chosen interaction type"),
    Param("queue_ms", "queue_ms", "ms", "Segment 1: admission and queueing, p95 contribution"),
    Param("cold_ms", "cold_ms", "ms", "Segment 2: weight loading (cold start) inside the p95"),
    Param("network_ms", "network_ms", "ms", "Segment 4: network / first-token delivery"),
    Param("prefill_tps", "prefill_tokens_per_s", "tokens/s", "Prefill rate: uncached prompt tokens per second"),
    Param("prompt_p95", "prompt_tokens_p95", "tokens", "p95 prompt length from your own logs"),
    Param("cache_hit", "cache_hit_fraction", "fraction", "Prefix-cache hit rate: only uncached tokens cost prefill"),
)
INTERACTION_PARAM = "interaction"
CUSTOM_PARAM = "custom"


def format_custom(targets_ms: dict[str, float], labels: dict[str, str], builtin: set[str]) -> str:
    """'Label:ms|Label 2:ms' for the interaction types the user added."""
    return "|".join(f"{labels.get(k, k)}:{targets_ms[k]:g}" for k in targets_ms if k not in builtin)


def parse_custom(text: str) -> list[tuple[str, str, float]]:
    """Inverse of format_custom: [(key, label, target_ms)]; malformed parts are skipped."""
    out = []
    for part in (text or "").split("|"):
        label, _, ms = part.rpartition(":")
        label = label.strip()
        try:
            target = float(ms)
        except ValueError:
            continue
        if label and math.isfinite(target) and target > 0:
            out.append((custom_key(label), label, target))
    return out


def custom_key(label: str) -> str:
    """Stable key for a user-added interaction type."""
    return "custom-" + "-".join(label.lower().split())


def query_for(ws: Worksheet, builtin: set[str]) -> str:
    """The query string that reproduces `ws` on the worksheet page."""
    # Streamlit binds a selectbox to the URL by the option's label, not its key.
    params: dict[str, str] = {INTERACTION_PARAM: ws.target_labels.get(ws.interaction, ws.interaction), "target_ms": f"{ws.target_ms:g}"}
    for p in PARAMS[1:]:
        fig: Figure = getattr(ws, p.field)
        params[p.key] = f"{fig.value:g}"
    custom = format_custom(ws.targets_ms, ws.target_labels, builtin)
    if custom:
        params[CUSTOM_PARAM] = custom
    return urlencode(params)


def worksheet_from_query(query: dict[str, str], base: Worksheet | None = None) -> Worksheet:
    """The worksheet a URL describes (unknown or malformed values keep base's); used by tests and the CLI."""
    ws = base or Worksheet()
    d = ws.to_dict()
    for key, label, target in parse_custom(query.get(CUSTOM_PARAM, "")):
        d["targets_ms"][key] = target
        d["target_labels"][key] = label
    by_label = {label: key for key, label in d["target_labels"].items()}
    chosen = query.get(INTERACTION_PARAM)
    if chosen in by_label:
        d["interaction"] = by_label[chosen]
    elif chosen in d["targets_ms"]:
        d["interaction"] = chosen
    for p in PARAMS:
        if p.key not in query:
            continue
        try:
            value = float(query[p.key])
        except ValueError:
            continue
        if p.field == "target":
            d["targets_ms"][d["interaction"]] = value
        else:
            d[p.field] = Figure.typed(value, p.unit).to_dict()
    return Worksheet.from_dict(d)
