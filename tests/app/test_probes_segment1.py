"""AppTest: Probes' segment 1 follows the documented rule (worst hour's p95 − quietest hour's p50, possibly one hour)
and, when it cannot be computed yet, says how many samples an hour the endpoint's own interval gives."""

from __future__ import annotations

import time

import pytest

from planner.endpoints.registry import add_endpoint
from planner.percentiles import percentile
from planner.store import open_store
from planner.store.probes import insert_samples
from tests.app.conftest import open_page
from tests.support.probe_rows import slot_row

HOUR = 3_600_000
# Twenty samples whose nearest-rank p50 is the 10th and p95 the 19th value.
SIX = [150.0] * 9 + [154.6] + [160.0] * 8 + [164.1, 170.0]  # 06:00: p50 154.6, p95 164.1
SEVEN = [150.0] * 9 + [155.0] + [157.0] * 8 + [159.5, 159.9]  # 07:00: p50 155.0, p95 159.5


def _seed(interval_s: float, hours: dict[int, list[float]]) -> None:
    eng = open_store()
    ep = add_endpoint(eng, {"name": "sim", "base_url": "http://127.0.0.1:1/v1", "model": "m", "interval_s": interval_s})
    yesterday = (int(time.time() * 1000) // (24 * HOUR) - 1) * 24 * HOUR  # midnight UTC, a day ago
    rows = [
        slot_row(ep.id, yesterday + hour * HOUR + k * 60_000, v)
        for hour, values in hours.items()
        for k, v in enumerate(values)
    ]
    insert_samples(eng, rows)


def test_worst_p95_and_quietest_p50_in_one_hour_hand_over_that_hours_spread():
    assert (percentile(SIX, 0.5).value, percentile(SIX, 0.95).value) == (154.6, 164.1)
    assert (percentile(SEVEN, 0.5).value, percentile(SEVEN, 0.95).value) == (155.0, 159.5)
    _seed(60.0, {6: SIX, 7: SEVEN})
    at = open_page("probes")
    metric = next(m for m in at.metric if m.label == "worst-hour p95 − quietest-hour p50")
    assert metric.value == "10 ms"  # 164.1 − 154.6 = 9.5, not 159.5 − 154.6 = 4.9
    captions = " ".join(c.value for c in at.caption)
    assert "worst and quietest hour 06:00: p95 164 ms − p50 155 ms" in captions
    assert "they may be the same hour" in captions  # the rule is stated on the page
    at.button(key="use_seg1").click().run()
    assert not at.exception, at.exception
    assert at.number_input(key="queue_ms").value == pytest.approx(9.5)


def test_too_few_hours_counts_the_endpoints_own_interval():
    _seed(300.0, {6: SIX})
    at = open_page("probes")
    reason = next(i.value for i in at.info if "different hours of day" in i.value)
    assert "60 s interval" not in reason and "60 samples" not in reason
    assert "300 s interval a day of probing gives 12 samples in every hour" in reason
    assert "every hour reaches 20 after 2 days" in reason
