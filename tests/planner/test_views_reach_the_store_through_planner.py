"""Pages reach the store only through planner functions: no module under app/views/ imports planner.store (at any
depth of the file: a lazy import is still an arrow), save the few listed below with the reason each is still there.

A view reads widgets, calls the library and draws (docs/architecture.md); the library's modules that name what a
page needs (planner.endpoints.probe_history, planner.fleet.watch, planner.fleet.requests, planner.logs.stored,
planner.sources.registry, planner.alerts.registry, …) are the store's only door for the pages. The list below only
shrinks: an entry whose view no longer imports the store fails here until it is removed.
"""

from __future__ import annotations

from tests.planner.test_import_graph import _imports, _modules

#: View module → why it still imports planner.store. Never add one: route the page through a planner function.
STORE_IMPORTS_ALLOWED: dict[str, str] = {}


def _views_importing_the_store() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for module, path in _modules("app").items():
        if not module.startswith("ttft_planner_app.views"):
            continue
        hits = sorted(n for n in _imports(module, path) if n == "planner.store" or n.startswith("planner.store."))
        if hits:
            out[module] = hits
    return out


def test_no_view_imports_the_store_outside_the_list():
    found = _views_importing_the_store()
    assert {m: hits for m, hits in found.items() if m not in STORE_IMPORTS_ALLOWED} == {}


def test_the_list_only_shrinks():
    """An allowed view that no longer imports the store leaves the list."""
    found = _views_importing_the_store()
    assert sorted(m for m in STORE_IMPORTS_ALLOWED if m not in found) == []
