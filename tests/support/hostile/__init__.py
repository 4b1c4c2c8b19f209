"""Hostile input for every reader of outside data.

- `corpus`: the hostile cases (deep JSON, wrong types, NaN/Inf/huge numbers, times outside 1970–2100, invalid
  UTF-8, UTF-16, BOM, NUL, bombs, drip / black-hole / never-accepting servers, huge bodies, echoed secrets), each
  saying which kinds of input it applies to (an HTTP body, a file, a database row, an OTLP export);
- `readers`: every reader of outside data as one callable per name (READERS: a new reader joins by one line);
- `server`, `documents`, `heavy`: the hostile HTTP server, the readers' documents with the case in them, and the
  subprocess that runs the memory-heavy cases and reads their peak RSS.

Here: endpoints whose names and server error bodies carry outside markup, what a misbehaving provider or a careless
teammate could store. The AppTest hostile-text tests (tests/app/test_hostile_and_faults.py) and the browser walk of
every page (tests/e2e/conftest.py) seed the same shape of store."""

from __future__ import annotations

import time

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from planner.store import session
from planner.store.worker import EndpointStatusRow
from tests.support.compare_seed import seed_endpoint

__all__ = ["seed_failing_endpoints"]


def seed_failing_endpoints(engine: Engine, names: list[str] | tuple[str, ...], detail: str, **seed_kw) -> None:
    """One probed endpoint per name (median 300 ms + `step_ms` per name, seed_endpoint's other options from
    `seed_kw`), each failing on the default vantage and on "office" with status text `detail`."""
    step_ms = seed_kw.pop("step_ms", 100)
    for i, name in enumerate(names):
        seed_endpoint(engine, name, median_ms=300 + step_ms * i, seed=i + 1, **seed_kw)
    with session(engine) as s:
        for name in names:
            eid = s.exec(sa.text("SELECT id FROM endpoint WHERE name = :n").bindparams(n=name)).scalar()
            for vantage in ("", "office"):
                s.add(
                    EndpointStatusRow(
                        endpoint_id=eid,
                        vantage=vantage,
                        state="failing",
                        consecutive_failures=5,
                        detail=detail,
                        updated_at_ms=int(time.time() * 1000),
                    )
                )
