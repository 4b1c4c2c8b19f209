"""A module imported on first use: the command line's log readers start without pandas' half second.

`lazy_module("pandas")` returns the module object at once and runs its code the first time an attribute is read
(the standard library's importlib.util.LazyLoader, as its documentation's "Implementing lazy imports" shows). A
module already imported is returned as it is. Type checkers see an ordinary import (see the callers'
`if TYPE_CHECKING:` blocks). Python 3.11's LazyLoader takes no lock: in a process with threads the first use should
come from one thread, or the module be imported outright first — the dashboard's router imports pandas and numpy
(through the app's own modules) before any log module is loaded.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

__all__ = ["lazy_module"]


def lazy_module(name: str) -> ModuleType:
    """The module `name`, its code run when first used. Raises ModuleNotFoundError at once if it is not installed."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
