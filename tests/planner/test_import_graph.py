"""The import graph of planner/: no cycles, no arrow from a lower layer up to a higher one, never the dashboard
(app/, the package ttft_planner_app) or streamlit.

Every import counts, the ones inside functions too (a lazy import is still an arrow: it only moves the failure to the
call). The layers are data, read from docs/architecture.md ("## Layers"): the doc is the one list, this test holds the
code to it. The doc's "path of one TTFT sample" is checked the same way: each step imports no step listed after it.

Importing a submodule also runs its package's __init__; that implicit arrow is not counted (a package's __init__
re-exporting its own modules is not a cycle Python minds), only the imports written in the files.
"""

from __future__ import annotations

import ast
import re
from collections import deque
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"

#: Cycles that exist today in files this change could not edit: (module, module) pairs of one cycle, each with why
#: it is allowed for now. Empty this list as they are fixed; a new cycle is never added here.
KNOWN_CYCLES: dict[frozenset[str], str] = {}

#: Imports from a lower layer into a higher one that exist today in files this change could not edit, each with why.
KNOWN_UPWARD: dict[tuple[str, str], str] = {}


#: Folders installed under another import name (setup.py's package_dir).
IMPORT_NAME = {"app": "ttft_planner_app"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    parts[0] = IMPORT_NAME.get(parts[0], parts[0])
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(top: str) -> dict[str, Path]:
    return {_module_name(p): p for p in sorted((ROOT / top).rglob("*.py"))}


@cache
def _all_modules() -> dict[str, Path]:
    return {**_modules("planner"), **_modules("app")}


def _imports(module: str, path: Path) -> set[str]:
    """Every module `module` imports (absolute and relative, at any depth of the file), resolved to a module of ours
    where one is named (`from planner import settings` → planner.settings); outside names are kept as written."""
    known = _all_modules()
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            for a in node.names:
                full = f"{target}.{a.name}"
                out.add(full if full in known else target)
    return out


@cache
def _graph() -> dict[str, set[str]]:
    """planner module → the planner modules it imports."""
    planner = _modules("planner")
    graph = {}
    for m, p in planner.items():
        graph[m] = {_owner(n, planner) for n in _imports(m, p) if n.split(".")[0] == "planner"}
        graph[m].discard("")
    return graph


def _owner(name: str, modules: dict[str, Path]) -> str:
    """The module `name` lives in (planner.percentiles.pct → planner.percentiles)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name


def _doc_block(heading: str) -> list[str]:
    """The lines of the first fenced block under `heading` in docs/architecture.md."""
    text = DOC.read_text(encoding="utf-8")
    at = text.index(f"\n{heading}\n")
    start = text.index("```", at)
    start = text.index("\n", start) + 1
    return text[start : text.index("```", start)].splitlines()


@cache
def layers() -> list[tuple[str, list[str]]]:
    """(layer name, its entries), lowest first, from the doc: `N name[: what it is]` starts layer N, indented lines
    list its modules and packages (a package entry covers every module under it; the entry `planner` is
    planner/__init__.py alone)."""
    out: list[tuple[str, list[str]]] = []
    for line in _doc_block("## Layers"):
        if not line.strip():
            continue
        head = re.fullmatch(r"(\d+) +(.+)", line)
        if head:
            assert int(head[1]) == len(out), f"layers are numbered 0, 1, … in order: {line!r}"
            out.append((head[2].split(":")[0].strip(), []))
        else:
            assert line.startswith(" ") and out, f"a module line is indented under its layer: {line!r}"
            out[-1][1].extend(line.split())
    return out


def _entry_of(module: str) -> str | None:
    """The most specific layer entry that covers `module`."""
    best = None
    for _, entries in layers():
        for e in entries:
            covers = module == e or (e != "planner" and module.startswith(e + "."))
            if covers and (best is None or len(e) > len(best)):
                best = e
    return best


def layer_of(module: str) -> int:
    entry = _entry_of(module)
    assert entry is not None, f"{module} is in no layer of docs/architecture.md"
    return next(i for i, (_, entries) in enumerate(layers()) if entry in entries)


def test_every_planner_module_has_a_layer_and_every_entry_a_module():
    unplaced = sorted(m for m in _graph() if _entry_of(m) is None)
    assert unplaced == [], "add each to a layer in docs/architecture.md"
    entries = [e for _, es in layers() for e in es]
    assert sorted(e for e in set(entries) if entries.count(e) > 1) == []
    stale = sorted(e for e in entries if not any(m == e or m.startswith(e + ".") for m in _graph()))
    assert stale == []


def test_planner_never_imports_app_or_streamlit():
    reached = sorted(
        f"{m} imports {n}"
        for m, p in _modules("planner").items()
        for n in _imports(m, p)
        if n.split(".")[0] in ("ttft_planner_app", "app", "streamlit")
    )
    assert reached == []


def _cycle_through(start: str, members: set[str], graph: dict[str, set[str]]) -> list[str]:
    """A shortest import path start → … → start inside one strongly connected component."""
    prev: dict[str, str] = {}
    queue = deque([start])
    while queue:
        m = queue.popleft()
        for n in sorted(graph[m] & members):
            if n == start:
                path = [m]
                while path[-1] != start:
                    path.append(prev[path[-1]])
                return [start, *reversed(path[:-1]), start] if m != start else [start, start]
            if n not in prev:
                prev[n] = m
                queue.append(n)
    raise AssertionError(f"no cycle through {start}")


def _components(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components with a cycle (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[set[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in graph:
                    continue
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = set()
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.add(w)
                        if w == v:
                            break
                    if len(comp) > 1 or v in graph[v]:
                        out.append(comp)
    return out


def test_no_import_cycle_between_planner_modules():
    graph = _graph()
    cycles = sorted(
        " → ".join(_cycle_through(min(comp), comp, graph))
        for comp in _components(graph)
        if frozenset(comp) not in KNOWN_CYCLES
    )
    assert cycles == []


def test_known_cycles_are_still_there():
    """A known cycle that is gone leaves the list (so the list only ever shrinks)."""
    components = {frozenset(c) for c in _components(_graph())}
    assert sorted(sorted(k) for k in KNOWN_CYCLES if k not in components) == []


def test_no_import_from_a_lower_layer_into_a_higher_one():
    names = [name for name, _ in layers()]
    upward = sorted(
        f"{m} ({names[layer_of(m)]}) imports {n} ({names[layer_of(n)]})"
        for m, deps in _graph().items()
        for n in deps
        if layer_of(n) > layer_of(m) and (m, n) not in KNOWN_UPWARD
    )
    assert upward == []
    assert sorted(k for k in KNOWN_UPWARD if k[1] not in _graph().get(k[0], set())) == []


def test_the_sample_path_in_the_doc_is_in_import_order():
    """docs/architecture.md, "The path of one TTFT sample": each step imports only the steps before it."""
    steps = [line.split()[0] for line in _doc_block("## The path of one TTFT sample") if line and not line[0].isspace()]
    modules = _all_modules()
    names = [_module_name(ROOT / s) for s in steps]
    assert all(n in modules for n in names), [s for s, n in zip(steps, names, strict=True) if n not in modules]
    later_of = {n: set(names[i + 1 :]) for i, n in enumerate(names)}
    back = sorted(
        f"{n} imports {_owner(d, modules)}, a later step"
        for n in names
        for d in _imports(n, modules[n])
        if _owner(d, modules) in later_of[n]
    )
    assert back == []


def test_nothing_imports_the_dashboard_by_its_folder_name():
    """app/ is the package ttft_planner_app (setup.py): `app` is another distribution's name once installed, and from
    the checkout's root it would load the dashboard's files a second time, as other modules."""
    found = []
    for folder in ("planner", "app", "tests", "bench", "scripts"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    names = [node.module or ""]
                else:
                    continue
                found += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names if n.split(".")[0] == "app"]
    assert found == []
