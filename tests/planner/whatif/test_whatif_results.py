"""What-if results: per-hour percentiles in the viewer's zone, the tail's segments, targets, cost, the cheapest pick."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from planner.whatif.deployment import parse_deployment
from planner.whatif.results import compare
from planner.whatif.trace import Trace, TraceError, busiest_day, grow, trace_from_frame

DAY0_MS = 1_764_460_800_000  # 2025-11-30 00:00 UTC (Berlin is UTC+1 then)
H_MS = 3_600_000


def steady_trace(n_per_hour: dict[int, int], prompt: float = 2000, cached: float = 1000, output: float = 50) -> Trace:
    """Evenly spaced requests in the given UTC hours of one day."""
    arrival = np.concatenate([DAY0_MS + h * H_MS + np.arange(k) * (H_MS / k) for h, k in sorted(n_per_hour.items())])
    n = len(arrival)
    return Trace(arrival, np.full(n, prompt), np.full(n, cached), np.full(n, output))


FAST_DEDICATED = "dedicated:name=fast,replicas=2,slots=4,prefill=10000,decode=50,usd_per_gpu_h=4,rtt=50"
SLOW_DEDICATED = "dedicated:name=slow,replicas=1,slots=4,prefill=1000,decode=50,usd_per_gpu_h=1,rtt=50"
SERVERLESS = "serverless:name=sls,window=3600,cold=20,slots=4,max=2,prefill=10000,decode=50,rtt=50,usd_per_mtok=0.5"


def test_cheapest_candidate_meeting_the_target_is_picked_and_the_misses_say_why():
    trace = steady_trace({9: 120, 10: 120, 11: 120})
    tiny = "dedicated:name=tiny,replicas=1,slots=1,prefill=100,decode=1,usd_per_gpu_h=0.1"
    result = compare(
        trace, [parse_deployment(s) for s in (FAST_DEDICATED, SLOW_DEDICATED, SERVERLESS, tiny)], interaction="chat"
    )
    fast, slow, sls, bad = result.candidates
    # fast: 50 ms RTT + 1000 uncached tokens at 10k/s = 150 ms; slow: 50 + 1000 ms.
    assert fast.overall["p95"].value == pytest.approx(150)
    assert slow.overall["p95"].value == pytest.approx(1050)
    assert fast.meets_target and not slow.meets_target
    assert slow.share_meeting == {"inline": 0.0, "chat": 0.0, "agent": 0.0}
    assert fast.share_meeting["inline"] == 1.0
    # The serverless pool's one cold start (20 s) is 1 request in 360: under the p95, in the p99? no (rank 357).
    assert sls.meets_target and sls.cold_starts == 1
    assert not bad.ok and "can never keep up" in bad.message
    # Dedicated: 2 replicas × $4/h over the period; serverless: 360 × 2050 tokens × $0.5/M.
    assert fast.cost_usd == pytest.approx(2 * 4 * fast.period_h)
    assert sls.cost_usd == pytest.approx(360 * 2050 * 0.5 / 1e6)
    assert result.cheapest == "sls"
    table = result.table()
    assert table.loc[table.cheapest, "candidate"].tolist() == ["sls"]
    assert table.loc[table.candidate == "tiny", "note"].item().startswith("can never keep up")


def test_hours_are_local_to_the_chosen_zone_and_greyed_below_twenty_requests():
    trace = steady_trace({3: 10, 9: 60})
    result = compare(trace, [parse_deployment(FAST_DEDICATED)], tz="Europe/Berlin")
    hours = {h.hour: h for h in result.candidates[0].hourly}
    assert sorted(hours) == [4, 10]  # UTC+1
    assert hours[10].n == 60 and hours[10].p95.reliable
    assert hours[4].n == 10 and not hours[4].p95.reliable
    frame = result.hourly_frame()
    assert frame.set_index("hour")["p95_reliable"].to_dict() == {4: False, 10: True}


def test_the_tail_breakdown_shows_which_segment_dominates():
    # Hourly single requests on a scale-to-zero pool with a 60 s window: every request is cold.
    trace = steady_trace({h: 1 for h in range(24)})
    dep = parse_deployment(
        "serverless:name=cold,window=60,cold=20,slots=1,max=1,prefill=10000,decode=50,rtt=50,usd_per_mtok=1"
    )
    c = compare(trace, [dep]).candidates[0]
    assert c.tail_segments_ms == pytest.approx({"queue_ms": 0, "cold_ms": 20_000, "prefill_ms": 100, "network_ms": 50})
    assert not c.meets_target and c.cold_starts == 24
    # Warm GPU time: each replica lives from scale-up through the 20 s load, 100 ms prefill + 0.98 s decode,
    # 60 s window.
    assert c.gpu_hours == pytest.approx(24 * (20 + 0.1 + 49 / 50 + 60) / 3600)


def test_a_log_without_timestamps_is_rejected_with_the_column_named():
    frame = pd.DataFrame({"prompt_tokens": [100, 200], "output_tokens": [5, 5]})
    with pytest.raises(TraceError, match=r"team.jsonl: the log has no timestamps \(missing column ts_ms\)"):
        trace_from_frame(frame, source="team.jsonl")
    bad_rows = pd.DataFrame({"ts_ms": [DAY0_MS, None], "prompt_tokens": [100, 200]})
    with pytest.raises(TraceError, match=r"1 row\(s\) have no usable ts_ms \(first at row 2\)"):
        trace_from_frame(bad_rows, source="x.csv")


def test_growth_scales_volume_and_keeps_the_hour_shape():
    trace = steady_trace({9: 100, 15: 300})
    grown = grow(trace, 1.5, seed=1)
    assert 560 <= grown.n <= 640
    hours = ((grown.arrival_ms - DAY0_MS) // H_MS).astype(int)
    assert set(np.unique(hours)) <= {8, 9, 10, 14, 15, 16}
    assert np.all(np.diff(grown.arrival_ms) >= 0)
    with pytest.raises(TraceError, match="growth must be a number > 0"):
        grow(trace, 0)


def test_busiest_day_picks_the_day_with_most_requests_in_the_zone():
    # 50 requests on Nov 30, 100 on Dec 1 (UTC); in Los Angeles (UTC−8) the Nov 30 10:00 UTC ones are still Nov 30.
    arrival = np.concatenate([DAY0_MS + 10 * H_MS + np.arange(50) * 1000, DAY0_MS + 34 * H_MS + np.arange(100) * 1000])
    n = len(arrival)
    both = Trace(arrival, np.full(n, 100.0), np.zeros(n), np.ones(n))
    day, label = busiest_day(both, "UTC")
    assert label == "2025-12-01" and day.n == 100
    with pytest.raises(TraceError, match="unknown time zone 'Mars/Olympus'"):
        busiest_day(both, "Mars/Olympus")
