"""The probe data path is one-way (docs/architecture.md, "The path of one TTFT sample"): probe → row → store →
queries → view. Every import counts, the ones inside functions too, so a lazy import cannot hide a back-step. And all
SQL is the store's: no package outside planner/store builds or runs it (the layers as a whole: test_import_graph.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


#: Import packages whose folder has another name (setup.py's package_dir): the dashboard's app/.
FOLDER = {"ttft_planner_app": "app"}


def _imports(package: str) -> dict[str, set[str]]:
    """module file → every planner/ttft_planner_app module it imports (absolute imports, at any depth of the file)."""
    out: dict[str, set[str]] = {}
    top, _, rest = package.partition(".")
    for path in sorted((ROOT / FOLDER.get(top, top) / rest.replace(".", "/")).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
            elif isinstance(node, ast.Import):
                names |= {a.name for a in node.names}
        ours = ("planner", "ttft_planner_app", "app", "streamlit")
        out[str(path.relative_to(ROOT))] = {n for n in names if n.split(".")[0] in ours}
    return out


@pytest.mark.parametrize(
    ("layer", "must_not_reach"),
    [
        # a probe returns a value
        ("planner.probes", ("planner.store", "planner.worker", "ttft_planner_app", "app", "streamlit")),
        # the store serves the worker, never the reverse
        ("planner.store", ("planner.worker", "ttft_planner_app", "app", "streamlit")),
        # pages (app/, the package ttft_planner_app) read the store (and the worker's state file through it)
        ("ttft_planner_app", ("planner.worker",)),
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


# Every SQL statement lives under planner/store (docs/architecture.md). Outside it a module may hold an Engine (a
# handle it passes to the store) and catch sqlalchemy.exc errors; everything else from SQLAlchemy, SQLModel or a
# database driver builds or runs SQL. DuckDB's SQL over log files (planner/logs) is not the store's: not looked for.
SQL_TOKENS = ("sa.select(", "sa.text(", "sa.func.", ".insert()", ".update()", ".delete()", "exec_driver_sql", ".exec(")
SQL_LIBRARIES = ("sqlalchemy", "sqlmodel", "sqlite3", "psycopg", "psycopg2")  # the store's SQL and its drivers
ALLOWED_SQL_IMPORTS = {"sqlalchemy.engine": {"Engine"}, "sqlalchemy.exc": None}  # None: any name
#: Files outside planner/store that may hold SQL, each with its reason.
SQL_EXCEPTIONS = {
    "planner/migrations": "Alembic revisions: the schema's DDL and data moves, run only by planner.store.migrate",
    "planner/sources/litellm.py": "reads the LiteLLM proxy's own database (read-only), not the store",
}


def _sql_in(path: Path) -> list[str]:
    """What in the file builds or runs SQL: SQLAlchemy/SQLModel imports beyond Engine and errors, and SQL calls."""
    text = path.read_text(encoding="utf-8")
    found = [f"calls {t}" for t in SQL_TOKENS if t in text]
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found += [f"imports {a.name}" for a in node.names if a.name.split(".")[0] in SQL_LIBRARIES]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in SQL_LIBRARIES:
            allowed = ALLOWED_SQL_IMPORTS.get(node.module, set())
            found += [
                f"imports {node.module}.{a.name}" for a in node.names if allowed is not None and a.name not in allowed
            ]
    return found


@pytest.mark.parametrize("package", ["planner", "app"])
def test_sql_lives_only_under_the_store(package):
    offenders = sorted(
        f"{rel}: {what}"
        for path in sorted((ROOT / package).rglob("*.py"))
        if not (rel := path.relative_to(ROOT).as_posix()).startswith("planner/store/")
        and not any(rel == e or rel.startswith(e + "/") for e in SQL_EXCEPTIONS)
        for what in _sql_in(path)
    )
    assert offenders == []


def test_every_sql_exception_still_holds_sql():
    """An exception whose files no longer hold SQL leaves the list (it only ever shrinks)."""
    stale = [
        e
        for e in SQL_EXCEPTIONS
        if not any(_sql_in(p) for p in ((ROOT / e).rglob("*.py") if (ROOT / e).is_dir() else [ROOT / e]))
    ]
    assert stale == []
