"""No planner module grows past 400 lines without saying why at its top (issue 30: small modules, one idea each)."""

from __future__ import annotations

import ast
from pathlib import Path

PLANNER = Path(__file__).resolve().parents[2] / "planner"
MAX_LINES = 400


def test_a_module_over_400_lines_states_its_reason_in_its_docstring():
    unexplained = []
    for path in sorted(PLANNER.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if text.count("\n") <= MAX_LINES:
            continue
        doc = ast.get_docstring(ast.parse(text)) or ""
        if "Over 400 lines: " not in doc:
            unexplained.append(f"{path.relative_to(PLANNER.parent)} ({text.count(chr(10))} lines)")
    assert not unexplained, "over 400 lines with no 'Over 400 lines: <why>' in the docstring: " + ", ".join(unexplained)
