"""The p95 targets a rule can take its threshold from: each interaction type's, and each saved worksheet's (its
target for the interaction type in force), so "tell us when p95 leaves the budget we planned" is one choice."""

from __future__ import annotations

from sqlalchemy.engine import Engine

from planner.store.worksheets import list_worksheets, load_worksheet
from planner.worksheet.budget import BudgetError
from planner.worksheet.interactions import interactions

__all__ = ["WORKSHEET_PREFIX", "p95_targets"]

WORKSHEET_PREFIX = "worksheet: "


def p95_targets(engine: Engine) -> dict[str, float]:
    """Target name → p95 ms: interaction keys (inline, chat, agent, …), then "worksheet: NAME" for each saved one."""
    out = {i.key: i.target_p95_ms for i in interactions()}
    for name, _ in list_worksheets(engine):
        try:
            out[WORKSHEET_PREFIX + name] = float(load_worksheet(engine, name).target_ms)
        except BudgetError:  # a worksheet whose interaction type no longer exists offers no target
            continue
    return out
