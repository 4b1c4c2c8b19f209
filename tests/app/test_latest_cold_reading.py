"""The latest cold reading by one rule (planner.endpoints.cold_readings.LATEST_RULE): the Probes page's segment 2 and
Compare's cold start agree when the newest reading failed half-way (its cold probe answered, its warm probe did not).

Before the rule was one, the Probes page took the newest reading done (cold − warm 4,700 ms) while Compare took the
newest with a cold time (9,000 ms cold, no warm: its cold − warm "missing")."""

from __future__ import annotations

import sqlalchemy as sa

from planner.compare.comparison import compare, metrics_table
from planner.endpoints.registry import add_endpoint
from planner.store import open_store
from planner.store.probes import insert_samples
from planner.store.worker import ColdReadingRow
from tests.app.conftest import open_page
from tests.support.cold_readings import store_cold_reading
from tests.support.probe_rows import slot_row

T0_MS = 1_780_000_000_000
HOUR = 3_600_000


def _seed() -> None:
    eng = open_store()
    ep = add_endpoint(
        eng, {"name": "sim", "base_url": "http://127.0.0.1:1/v1", "model": "m", "scale_down_window_s": 300.0}
    )
    insert_samples(eng, [slot_row(ep.id, T0_MS + k * 120_000, 200.0 + k) for k in range(30)])
    # an older reading, whole: 5,000 ms cold after 330 s idle, then 300 ms warm
    store_cold_reading(
        eng,
        ep.id,
        idle_s=330.0,
        cold_ttft_ms=5_000.0,
        warm_ttft_ms=300.0,
        requested_at_ms=T0_MS + HOUR,
        completed_at_ms=T0_MS + HOUR + 400_000,
    )
    # the newest: its cold probe answered in 9,000 ms, its warm probe was refused
    with eng.begin() as c:
        c.execute(
            sa.insert(ColdReadingRow.__table__).values(
                endpoint_id=ep.id,
                vantage="",
                state="failed",
                detail="warm probe: server_error",
                idle_s=330.0,
                requested_at_ms=T0_MS + 2 * HOUR,
                cold_ttft_ms=9_000.0,
                cold_attempts=1,
                completed_at_ms=T0_MS + 2 * HOUR + 400_000,
            )
        )
    eng.dispose()


def test_the_probes_page_and_compare_take_the_same_latest_cold_reading():
    _seed()
    at = open_page("probes")
    assert not at.exception, at.exception
    assert {m.label: m.value for m in at.metric}["latest cold − warm"] == "4,700 ms"
    assert any("failed half-way" in c.value for c in at.caption)  # the rule, said beside the figure
    eng = open_store()
    row = metrics_table(compare(eng, ["sim"], since_ms=T0_MS, until_ms=T0_MS + 3 * HOUR, n_boot=100)).iloc[0]
    eng.dispose()
    assert (row["cold_ttft_ms"], row["cold_minus_warm_ms"]) == (5_000.0, 4_700.0)
