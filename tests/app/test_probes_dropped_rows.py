"""AppTest (issue 42 item 18): a worker whose full disk made it drop rows past its bound says so on the Probes page,
beside the rows it still holds."""

from __future__ import annotations

import time

from planner.endpoints.registry import add_endpoint
from planner.store import open_store, worker_state
from tests.app.conftest import open_page
from tests.support.worker_states import write_disk_full_state


def test_the_probes_page_shows_the_rows_held_and_the_rows_dropped(monkeypatch):
    # The page judges the state file's freshness on the real clock; staleness is not what this test is about.
    monkeypatch.setattr(worker_state, "STALE_AFTER_MS", 3_600_000)
    eng = open_store()
    add_endpoint(eng, {"name": "sim", "base_url": "http://127.0.0.1:1/v1", "model": "m"})
    now = int(time.time() * 1000)
    write_disk_full_state(
        eng,
        now_ms=now,
        holds_lease=True,
        unsaved_rows=10,
        unsaved_since_ms=now - 120_000,
        dropped_rows=1234,
        max_held_rows=10,
    )
    texts = [w.value for w in open_page("probes").warning]
    assert any(
        "buffering 10 rows since" in t and "it lost 1,234 probe rows unsaved" in t and "at most 10 in memory" in t
        for t in texts
    ), texts
