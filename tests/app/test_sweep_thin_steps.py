"""AppTest: the Load sweep table marks a percentile resting on too few requests as the command does, the knee that
rests on one says so, and a load of one reads "1 request/s"."""

from __future__ import annotations

import dataclasses

from planner.sweep.knee import knee_of
from tests.app.conftest import shown_table
from tests.app.test_sweep_page import _one_slot_sweep, _open_with_stored, _step


def test_thin_percentiles_are_marked_and_the_knee_on_one_is_provisional():
    whole = _one_slot_sweep()
    # 1 request/s with 3 answers (a p95 needs 20), then 15 requests/s with 22 (enough for a p95, not for a p99)
    steps = (_step(0, 1.0, [100.0, 105.0, 110.0]), dataclasses.replace(whole.steps[1], load=15.0))
    knee, over = knee_of([s.load for s in steps], [s.ttft_p95_ms for s in steps], 500)
    assert (knee, over) == (1.0, 15.0)
    at = _open_with_stored(dataclasses.replace(whole, steps=steps, knee_load=knee, over_load=over))
    assert not at.exception, at.exception
    table = shown_table(at).set_index("Load")
    assert table.loc["1", "TTFT p95 (ms)"] == "110 ms (too few)"
    assert table.loc["1", "TTFT p50 (ms)"] == "105 ms"
    assert table.loc["15", "TTFT p95 (ms)"].endswith(" ms")  # 22 requests: enough for a p95
    assert table.loc["15", "TTFT p99 (ms)"].endswith("(too few)")  # a p99 needs 100
    assert {m.label: m.value for m in at.metric}["Knee"] == "1 request/s (too few)"
    assert any("The knee rests on a p95 from 3 successful requests" in w.value for w in at.warning)
    captions = " ".join(c.value for c in at.caption)
    assert "up to 1 request/s and leaves it at 15 requests/s" in captions
    assert "1 requests/s" not in captions
