"""Worksheet exports (Markdown and JSON) and the side-by-side comparison of saved worksheets."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from planner.inputs.untrusted import md_text
from planner.worksheet.budget import SEGMENTS, BudgetError, BudgetResult, Worksheet, compute_worksheet, verdict_text
from planner.worksheet.provenance import Figure

__all__ = ["VERDICT_WORDS", "comparison_rows", "per_interaction_rows", "to_json", "to_markdown"]

_INPUTS = {
    "prefill_tokens_per_s": ("Prefill rate", "tokens/s"),
    "prompt_tokens_p95": ("p95 prompt", "tokens"),
    "cache_hit_fraction": ("Prefix-cache hit rate", ""),
}


def _fmt(value: float | None, unit: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, float) and math.isinf(value):
        return "unlimited"
    text = f"{value:,.2f}" if unit == "" and abs(value) < 10 else f"{value:,.0f}"
    return f"{text} {unit}".strip()


def to_json(ws: Worksheet) -> str:
    """The worksheet's inputs (with provenance) and its computed result, as pretty JSON."""
    r = compute_worksheet(ws)
    level, sentence = verdict_text(r)
    result = {
        "prefill_budget_ms": r.prefill_budget_ms,
        "prefill_needed_ms": r.prefill_needed_ms,
        "uncached_prompt_tokens": r.uncached_prompt_tokens,
        "max_prompt_tokens_p95": None if math.isinf(r.max_prompt_tokens_p95) else r.max_prompt_tokens_p95,
        "prompt_fits": r.prompt_fits,
        "culprit_segment": r.culprit_segment,
        "verdict": level,
        "verdict_text": sentence,
    }
    return json.dumps({"worksheet": ws.to_dict(), "result": result}, indent=2, allow_nan=False, default=str)


def per_interaction_rows(ws: Worksheet) -> list[dict]:
    """One row per interaction type: target, prefill budget, verdict — the same segments against every target."""
    rows = []
    for key, target in ws.targets_ms.items():
        try:
            r = compute_worksheet(Worksheet.from_dict({**ws.to_dict(), "interaction": key}))
        except BudgetError as exc:
            rows.append(
                {
                    "interaction": ws.target_labels.get(key, key),
                    "target_ms": target,
                    "verdict": "error",
                    "note": str(exc),
                }
            )
            continue
        level, _ = verdict_text(r)
        rows.append(
            {
                "interaction": ws.target_labels.get(key, key),
                "target_ms": r.target_ms,
                "prefill_budget_ms": r.prefill_budget_ms,
                "prefill_needed_ms": r.prefill_needed_ms,
                "max_prompt_tokens_p95": r.max_prompt_tokens_p95,
                "verdict": level,
            }
        )
    return rows


#: A verdict level in words, for documents a reader forwards ("warn" and "ok" are codes).
VERDICT_WORDS = {"ok": "fits", "warn": "prompt too large", "error": "over budget"}


def to_markdown(ws: Worksheet, *, tz: str = "UTC", saved: bool = True) -> str:
    """A Markdown summary for design docs: segments with provenance, budget, verdict, all interaction types.

    tz: the zone measured-at times are written in (the viewer's); saved: False when the inputs differ from the
    worksheet saved under `ws.name` (or none is), which the title then says, so an edit is never passed off as the
    saved plan."""
    r = compute_worksheet(ws)
    level, sentence = verdict_text(r)
    label = ws.target_labels.get(ws.interaction, ws.interaction)
    lines = [
        f"# TTFT worksheet: {md_text(ws.name)}{'' if saved else ' (edited, not saved)'}",
        "",
        f"Interaction type: **{md_text(label)}**, p95 target **{r.target_ms:,.0f} ms**.",
        "",
        "| segment | ms | source |",
        "|---|---:|---|",
    ]
    for key, name in SEGMENTS.items():
        fig: Figure = ws.segment(key)
        lines.append(f"| {name} | {fig.value:,.0f} | {md_text(fig.describe(tz))} |")
    lines.append(f"| **Prefill budget (what remains)** | **{r.prefill_budget_ms:,.0f}** | target − the three above |")
    lines += ["", "| input | value | source |", "|---|---:|---|"]
    for key, (name, unit) in _INPUTS.items():
        fig = getattr(ws, key)
        lines.append(f"| {name} | {_fmt(fig.value, unit)} | {md_text(fig.describe(tz))} |")
    lines += [
        "",
        f"Prefill needed for the p95 prompt: {_fmt(r.prefill_needed_ms, 'ms')} "
        f"({_fmt(r.uncached_prompt_tokens, 'uncached tokens')}); "
        f"largest p95 prompt that fits: {_fmt(r.max_prompt_tokens_p95, 'tokens')}.",
        "",
        f"**Verdict ({VERDICT_WORDS[level]}):** {md_text(sentence)}",
        "",
        "## Every interaction type with these segments",
        "",
        "| interaction | target ms | prefill budget ms | prefill needed ms | verdict |",
        "|---|---:|---:|---:|---|",
    ]
    for row in per_interaction_rows(ws):
        lines.append(
            f"| {md_text(row['interaction'])} | {row['target_ms']:,.0f} | {_fmt(row.get('prefill_budget_ms'))} | "
            f"{_fmt(row.get('prefill_needed_ms'))} | "
            f"{md_text('cannot compute: ' + row['note']) if 'note' in row else VERDICT_WORDS[row['verdict']]} |"
        )
    if ws.notes:
        lines += ["", "## Notes", "", *(md_text(line) for line in ws.notes.splitlines())]  # text, never links or images
    lines += ["", "Percentiles are nearest-rank p95; segments are p95 contributions. Generated by TTFT Planner."]
    return "\n".join(lines) + "\n"


def comparison_rows(worksheets: Sequence[Worksheet]) -> list[dict]:
    """One row per saved worksheet for the side-by-side table and grouped chart."""
    rows = []
    for ws in worksheets:
        r: BudgetResult = compute_worksheet(ws)
        level, _ = verdict_text(r)
        rows.append(
            {
                "worksheet": ws.name,
                "interaction": ws.target_labels.get(ws.interaction, ws.interaction),
                "target_ms": r.target_ms,
                "queue_ms": r.queue_ms,
                "cold_ms": r.cold_ms,
                "network_ms": r.network_ms,
                "prefill_budget_ms": r.prefill_budget_ms,
                "prefill_needed_ms": r.prefill_needed_ms,
                "max_prompt_tokens_p95": r.max_prompt_tokens_p95,
                "verdict": level,
            }
        )
    return rows
