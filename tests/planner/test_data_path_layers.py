"""The probe data path is one-way (docs/architecture.md, "The path of one TTFT sample"): probe → row → store →
queries → view. Every import counts, the ones inside functions too, so a lazy import cannot hide a back-step."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _imports(package: str) -> dict[str, set[str]]:
    """module file → every planner/app module it imports (absolute imports, at any depth of the file)."""
    out: dict[str, set[str]] = {}
    for path in sorted((ROOT / package.replace(".", "/")).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
            elif isinstance(node, ast.Import):
                names |= {a.name for a in node.names}
        out[str(path.relative_to(ROOT))] = {n for n in names if n.split(".")[0] in ("planner", "app", "streamlit")}
    return out


@pytest.mark.parametrize(
    ("layer", "must_not_reach"),
    [
        ("planner.probes", ("planner.store", "planner.worker", "app", "streamlit")),  # a probe returns a value
        ("planner.store", ("planner.worker", "app", "streamlit")),  # the store serves the worker, never the reverse
        ("app", ("planner.worker",)),  # pages read the store (and the worker's state file through it)
    ],
)
def test_no_layer_imports_a_layer_above_it(layer, must_not_reach):
    back_steps = sorted(
        f"{f} imports {n}"
        for f, names in _imports(layer).items()
        for n in names
        if any(n == p or n.startswith(p + ".") for p in must_not_reach)
    )
    assert back_steps == []


def test_the_worker_writes_sql_only_through_the_store():
    offenders = []
    for path in sorted((ROOT / "planner/worker").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if any(token in text for token in ("sa.select(", ".insert()", ".update()", "exec_driver_sql", "sa.text(")):
            offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []
