"""AppTest (issue 15 item 9): during a disk-full outage the Probes page reports the worker's real state —
running and buffering N rows since T, and why — not "No worker is running"."""

from __future__ import annotations

import time

from planner.endpoints.registry import add_endpoint
from planner.store import open_store, worker_state
from tests.app.conftest import open_page
from tests.support.worker_states import write_disk_full_state


def test_a_buffering_worker_is_shown_as_running_and_buffering(monkeypatch):
    # The page judges the state file's freshness on the real clock (STALE_AFTER_MS after it was written); a loaded
    # machine may take longer than that to render the page, and staleness is not what this test is about.
    monkeypatch.setattr(worker_state, "STALE_AFTER_MS", 3_600_000)
    eng = open_store()
    add_endpoint(eng, {"name": "sim", "base_url": "http://127.0.0.1:1/v1", "model": "m"})
    now = int(time.time() * 1000)
    # What the worker writes while its lease cannot be renewed (the database is full): no live lease row.
    write_disk_full_state(eng, now_ms=now, holds_lease=True, unsaved_rows=42, unsaved_since_ms=now - 120_000)
    at = open_page("probes")
    texts = [w.value for w in at.warning]
    assert any("buffering 42 rows since" in t and "disk is full" in t for t in texts), texts
    assert not any("No worker is probing" in t for t in texts), texts
