"""probe_sample rows for the tests that seed a series slot by slot (stored with store.probes.insert_samples), and the
store such a module seeds once: tests of read-only queries share one seeded database per back end."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from planner.store import open_store
from planner.store.probes import ProbeSampleRow
from tests.support.store_template import migrated_sqlite

__all__ = ["STORE_BACKENDS", "module_engine", "slot_row"]

#: The params of a module-scoped store fixture: the `store_url` fixture's two back ends.
STORE_BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]

_counter = itertools.count()


def slot_row(
    endpoint_id: int,
    t_ms: int,
    ttft_ms: float | None = None,
    *,
    kind: str = "scheduled",
    vantage: str = "",
    **columns: Any,
) -> ProbeSampleRow:
    """The outcome of the slot at t_ms (scheduled and started then): a success with ttft_ms; without one a failed
    probe (server_error), or with kind="skipped" a skipped slot. `columns` sets any other column (timings, …).

    Built with model_construct: the same values as ProbeSampleRow(...) (a table model does not validate either)
    without the ORM's per-attribute instrumentation, which made building 10,000 rows take seconds. The row is for
    insert_samples (plain INSERTs), not for Session.add."""
    failed = ttft_ms is None and kind != "skipped"
    return ProbeSampleRow.model_construct(
        endpoint_id=endpoint_id,
        vantage=vantage,
        kind=kind,
        scheduled_at_ms=t_ms,
        started_at_ms=t_ms,
        ok=ttft_ms is not None,
        ttft_ms=ttft_ms,
        error_class="server_error" if failed else None,
        **columns,
    )


@contextmanager
def module_engine(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    """An engine on a fresh migrated store of the back end `request.param` (one of STORE_BACKENDS), for a
    module-scoped fixture that seeds it once for tests that only read it. Disposed on exit; a PostgreSQL copy is
    dropped too. Mark the module `pytest.mark.xdist_group(...)` so its tests share one worker and one seeding."""
    if request.param == "sqlite":
        url = migrated_sqlite(tmp_path_factory.mktemp("store") / "planner.db")
        name = None
    else:
        pg = request.getfixturevalue("pg_server")
        name = f"m{os.getpid()}_{next(_counter)}"
        url = pg.fresh_database(name, template=request.getfixturevalue("pg_template"))
    engine = open_store(url)
    try:
        yield engine
    finally:
        engine.dispose()
        if name is not None:
            pg.drop_database(name)
