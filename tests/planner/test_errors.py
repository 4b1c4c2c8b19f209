"""One root for the planner's own exceptions: every exception class defined under planner/ derives from
planner.errors.PlannerError, and keeps the built-in base it had."""

import importlib
import inspect
import pkgutil

import pytest

import planner
from planner.errors import CatalogError, PlannerError


def _modules() -> list[str]:
    names = [m.name for m in pkgutil.walk_packages(planner.__path__, "planner.")]
    return sorted(n for n in names if ".migrations.versions." not in n)


def _own_exceptions() -> list[type[BaseException]]:
    found = []
    for name in _modules():
        module = importlib.import_module(name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, BaseException) and obj.__module__ == name:
                found.append(obj)
    return found


def test_the_walk_finds_the_known_errors():
    names = {e.__qualname__ for e in _own_exceptions()}
    assert {"CatalogError", "EndpointError", "ProbeFault", "StoreError", "UploadNotFound"} <= names
    assert {"ProbeProcessError", "WireError"} <= names  # the worker's


@pytest.mark.parametrize("exc", _own_exceptions(), ids=lambda e: f"{e.__module__}.{e.__qualname__}")
def test_every_planner_exception_derives_from_planner_error(exc):
    assert issubclass(exc, PlannerError), f"{exc.__module__}.{exc.__qualname__} does not derive from PlannerError"


def test_errors_keep_their_builtin_base():
    """Callers written before PlannerError (`except ValueError`, `except KeyError`) still catch the same errors."""
    from planner.endpoints.registry import EndpointError, EndpointNotFound
    from planner.store.database import StoreError
    from planner.store.logs import UploadNotFound
    from planner.worker.probe_pool import ProbeProcessError
    from planner.worker.probe_wire import WireError

    assert issubclass(EndpointError, ValueError)
    assert issubclass(EndpointNotFound, KeyError)
    assert issubclass(StoreError, RuntimeError)
    assert issubclass(CatalogError, ValueError)
    assert issubclass(WireError, ValueError)
    assert issubclass(ProbeProcessError, RuntimeError)
    assert str(UploadNotFound("x")) == "'x'"  # KeyError's own str(), as before
    assert str(EndpointNotFound("x")) == "x"  # its own __str__, as before


def test_one_catalog_error_for_regions_and_providers():
    from planner.endpoints import providers
    from planner.regions import catalog as regions

    assert regions.CatalogError is providers.CatalogError is CatalogError


def test_the_tree_in_errors_docstring_names_every_planner_error():
    """planner/errors.py's docstring draws the exception tree by what a reader of the message can do: a new error class
    (or a renamed one) is drawn there too."""
    import planner.errors

    doc = planner.errors.__doc__ or ""
    missing = [
        f"{e.__module__}.{e.__qualname__}"
        for e in _own_exceptions()
        if issubclass(e, PlannerError) and not e.__name__.startswith("_") and e.__name__ not in doc
    ]
    assert not missing, f"not in planner/errors.py's tree: {missing}"
