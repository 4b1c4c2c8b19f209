"""What a reader made of a hostile case, and what the readers need to run.

An Outcome is REFUSED (a clean refusal: the project's own error, one line; a probe sample with its error class; an
HTTP 4xx or an OTLP partial success naming what it rejected; rows or lines left out with their reasons; a command's
non-zero exit with its message), READ (a result, checked to be sane: finite, non-negative, times from 1970 to 2100,
the good records beside the hostile ones kept) or WRONG (what a user would notice: a 500, an error logged, a NaN
stored, a good record lost). Any other exception is a traceback: the reader callables let it through. `texts` is
everything the reader showed, stored or logged, searched for the corpus's secrets.

`Env` holds the readers' resources, each made on first use: the hostile HTTP server, a black hole, a port that never
accepts, a temp folder, a migrated SQLite store, the OTLP receiver on it, the LiteLLM proxy's database (given by the
test: it needs the session's PostgreSQL), and a capture of what planner and uvicorn log.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import logging
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine

from tests.support.black_hole import BlackHole
from tests.support.hostile.server import HostileServer, hostile_server
from tests.support.servers import full_backlog

__all__ = ["READ", "REFUSED", "WRONG", "Env", "Outcome", "logged_failures", "one_line", "sane_number"]

REFUSED, READ, WRONG = "refused", "read", "wrong"


@dataclass
class Outcome:
    """One answer of a reader (module docstring)."""

    verdict: str
    said: str
    texts: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.texts = [self.said, *self.texts]


def one_line(message: str, *texts: str) -> Outcome:
    """A refusal by message: REFUSED when it is one non-empty line, else WRONG."""
    if not message.strip() or "\n" in message.strip() or "Traceback" in message:
        return Outcome(WRONG, f"the refusal is not one line: {message[:300]!r}", list(texts))
    return Outcome(REFUSED, message, list(texts))


def sane_number(value: Any, *, whole: bool = False, top: float = 1e15) -> bool:
    """True for None or a finite number from 0 to `top` (a whole one where `whole`)."""
    if value is None:
        return True
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if isinstance(value, int):  # compared as it is: an int past any float (10**400) has no float to check
        return 0 <= value <= top
    if whole and not value.is_integer():
        return False
    return math.isfinite(value) and 0 <= value <= top


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


class Env:
    """The readers' resources (module docstring); `close()` ends them."""

    def __init__(self, tmp: Path, proxy: Any = None) -> None:
        self.tmp = tmp
        self.proxy = proxy  # tests.support.hostile.litellm.Proxy, or None where no PostgreSQL runs
        self._stack = contextlib.ExitStack()
        self._names = itertools.count()
        self._capture = _Capture()
        for name in ("", "uvicorn"):
            logging.getLogger(name).addHandler(self._capture)
            self._stack.callback(logging.getLogger(name).removeHandler, self._capture)

    def close(self) -> None:
        self._stack.close()

    def name(self, stem: str = "x") -> str:
        """A name unique in this Env."""
        return f"{stem}{next(self._names)}"

    def folder(self) -> Path:
        """A fresh folder under the temp folder."""
        path = self.tmp / self.name("case")
        path.mkdir()
        return path

    @functools.cached_property
    def server(self) -> HostileServer:
        server = self._stack.enter_context(hostile_server())
        logging.getLogger("uvicorn").addHandler(self._capture)  # uvicorn set its loggers up as it started
        return server

    @functools.cached_property
    def black_hole(self) -> BlackHole:
        return self._stack.enter_context(BlackHole())

    @functools.cached_property
    def never_accepts(self) -> int:
        """A local port whose accept queue is full: a connect to it times out."""
        return self._stack.enter_context(full_backlog())

    @functools.cached_property
    def store(self) -> Engine:
        from planner.store import open_store
        from tests.support.store_template import migrated_sqlite

        engine = open_store(migrated_sqlite(self.tmp / "store.db"))
        self._stack.callback(engine.dispose)
        return engine

    def enter(self, context: Any) -> Any:
        """Enter a context manager until close()."""
        return self._stack.enter_context(context)

    def log_mark(self) -> int:
        return len(self._capture.records)

    def logged_since(self, mark: int) -> list[logging.LogRecord]:
        return self._capture.records[mark:]


def logged_failures(records: Iterable[logging.LogRecord]) -> list[str]:
    """The records that say a bug of ours: an error, or anything with a traceback."""
    return [f"{r.name}: {r.getMessage()[:300]}" for r in records if r.levelno >= logging.ERROR or r.exc_info]
