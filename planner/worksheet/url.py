"""The worksheet's public URL contract: query-parameter names, defaults and help (one table, like datasette's SETTINGS).

The Worksheet page writes the whole worksheet into the address bar after every run, so a reload, a bookmark or a
shared link reproduces the same inputs *and where each came from*:

- one parameter per input (`PARAMS`), the value in its unit (`queue_ms=60`);
- `interaction` (the label of the interaction type in force) and `custom` (`Label:ms|Label 2:ms`, the
  interaction types the user added); `targets` (`chat:800|agent:1500`) for built-in types whose target was changed
  while another type is in force;
- `<param>_from` for every figure that was measured or modelled rather than typed: its provenance (source,
  detail, n, window, measured-at) as base64url-encoded JSON. The provenance also records the value it belongs to,
  so a value edited in the URL by hand is read as typed, never as measured.

Old links (no `_from` parameters) keep working: their values open as typed.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from dataclasses import dataclass
from urllib.parse import urlencode

from planner.worksheet.budget import Worksheet
from planner.worksheet.provenance import Figure, Source

__all__ = [
    "PARAMS",
    "Param",
    "custom_key",
    "format_custom",
    "format_value",
    "parse_custom",
    "provenance_param",
    "query_dict",
    "query_for",
    "worksheet_from_query",
]


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
TARGETS_PARAM = "targets"
PROVENANCE_SUFFIX = "_from"


def format_value(value: float) -> str:
    """A number for the URL that reads back exactly: '60', '0.5', '12345.678901'."""
    value = float(value)
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)


def provenance_param(key: str) -> str:
    """The query parameter that carries the provenance of input `key`, e.g. 'cold_ms_from'."""
    return key + PROVENANCE_SUFFIX


def _encode_provenance(fig: Figure) -> str:
    record = {
        "v": fig.value,
        "s": str(fig.source),
        "d": fig.detail,
        "n": fig.n,
        "w": fig.window,
        "t": fig.measured_at_ms,
    }
    raw = json.dumps(
        {k: v for k, v in record.items() if v not in (None, "")}, separators=(",", ":"), ensure_ascii=False
    )
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_provenance(text: str, value: float, unit: str) -> Figure | None:
    """The figure `text` describes if it belongs to `value`; None for a malformed record or another value."""
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        d = json.loads(raw.decode())
        if not isinstance(d, dict) or float(d["v"]) != value:
            return None
        return Figure.from_dict(
            {
                "value": value,
                "unit": unit,
                "source": d.get("s", "typed"),
                "detail": d.get("d", ""),
                "n": d.get("n"),
                "window": d.get("w", ""),
                "measured_at_ms": d.get("t"),
            }
        )
    except (binascii.Error, UnicodeDecodeError, ValueError, TypeError, KeyError):
        return None


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


def query_dict(ws: Worksheet, builtin: set[str]) -> dict[str, str]:
    """The query parameters that reproduce `ws` (inputs and provenance) on the worksheet page."""
    # The interaction travels by its label (what a reader of the URL recognises); the key works too.
    params: dict[str, str] = {
        INTERACTION_PARAM: ws.target_labels.get(ws.interaction, ws.interaction),
        "target_ms": format_value(ws.target_ms),
    }
    for p in PARAMS[1:]:
        fig: Figure = getattr(ws, p.field)
        params[p.key] = format_value(fig.value)
        if fig.source != Source.TYPED:
            params[provenance_param(p.key)] = _encode_provenance(fig)
    custom = format_custom(ws.targets_ms, ws.target_labels, builtin)
    if custom:
        params[CUSTOM_PARAM] = custom
    preset = Worksheet().targets_ms
    changed = [
        f"{k}:{format_value(t)}"
        for k, t in ws.targets_ms.items()
        if k in builtin and k != ws.interaction and k in preset and t != preset[k]
    ]
    if changed:
        params[TARGETS_PARAM] = "|".join(changed)
    return params


def query_for(ws: Worksheet, builtin: set[str]) -> str:
    """The query string that reproduces `ws` on the worksheet page."""
    return urlencode(query_dict(ws, builtin))


def worksheet_from_query(query: dict[str, str], base: Worksheet | None = None) -> Worksheet:
    """The worksheet a URL describes (unknown or malformed values keep base's); used by the page, tests and the CLI."""
    ws = base or Worksheet()
    d = ws.to_dict()
    for key, label, target in parse_custom(query.get(CUSTOM_PARAM, "")):
        d["targets_ms"][key] = target
        d["target_labels"][key] = label
    for part in query.get(TARGETS_PARAM, "").split("|"):
        key, _, ms = part.partition(":")
        try:
            target = float(ms)
        except ValueError:
            continue
        if key in d["targets_ms"] and math.isfinite(target) and target > 0:
            d["targets_ms"][key] = target
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
        if not math.isfinite(value):
            continue
        if p.field == "target":
            d["targets_ms"][d["interaction"]] = value
            continue
        fig = (
            _decode_provenance(query.get(provenance_param(p.key), ""), value, p.unit)
            if provenance_param(p.key) in query
            else None
        )
        d[p.field] = (fig or Figure.typed(value, p.unit)).to_dict()
    return Worksheet.from_dict(d)
