"""compare() over a real store (SQLite and PostgreSQL): figures, ranking, CI verdicts, cold, RTT, filters.

The tests that only read share the three endpoints seeded once per back end (`seeded`); a test that writes (a cold
reading, another endpoint) has its own store with just the endpoints it needs (seed_three's `only`)."""

import datetime as dt

import numpy as np
import pytest

from planner.compare import CANNOT_TELL, UnknownEndpoint, compare
from planner.compare.comparison import day_range_ms, format_window
from planner.compare.cost import cost_basis
from planner.compare.data import load_endpoints
from planner.compare.figures import hourly_profile
from planner.compare.ranking import LEVEL_LABELS, decision_levels
from planner.percentiles import percentile
from planner.store import session
from planner.store.rtt import SampleRecord, insert_rtt_samples
from planner.store.worker import ColdReadingRow
from planner.worksheet.budget import Worksheet
from planner.worksheet.provenance import Source
from tests.support.compare_seed import DAY_MS, SEED_START_MS, seed_endpoint, seed_three
from tests.support.probe_rows import STORE_BACKENDS, module_engine

pytestmark = pytest.mark.xdist_group("test_compare_ranking")

NAMES = ["fast-a", "slow-b", "twin-c"]


@pytest.fixture(scope="module", params=STORE_BACKENDS)
def seeded(request, tmp_path_factory):
    """fast-a, slow-b and twin-c (240 samples each) on each back end, for the tests that only read."""
    with module_engine(request, tmp_path_factory) as engine:
        yield engine, seed_three(engine, n=240)


def test_ranking_puts_the_clear_winner_first_and_the_clear_loser_last(seeded):
    engine, values = seeded
    cmp = compare(engine, NAMES)
    order = [r.metrics.name for r in cmp.ranked]
    assert order[-1] == "slow-b"
    assert set(order[:2]) == {"fast-a", "twin-c"}
    loser = cmp.ranked[-1]
    assert loser.vs_leader.distinguishable and loser.vs_leader.verdict == f"{order[0]} is faster"
    assert loser.vs_leader.faster == order[0] and cmp.ranked[1].vs_leader.faster is None
    # The runner-up is drawn from the leader's distribution: the page must not claim it is slower.
    assert cmp.ranked[1].tied_with_leader and cmp.ranked[1].vs_leader.verdict == CANNOT_TELL
    table = cmp.decision
    assert table.loc[1, "vs_leader"] == f"cannot yet tell apart from {order[0]}"
    assert table["rank"].tolist() == [1, 2, 3]


def test_percentiles_rates_and_goodput_match_the_stored_samples(seeded):
    engine, values = seeded
    cmp = compare(engine, NAMES)
    m = {x.name: x for x in cmp.metrics}
    fast = values["fast-a"].tolist()  # the warm half of its cold reading is not a sample (planner.endpoints.samples)
    assert m["fast-a"].ttft["p95"].value == percentile(fast, 0.95).value
    assert m["fast-a"].ttft["p95"].n == 240 and m["fast-a"].p95_reliable
    assert m["slow-b"].ttft["p99"].value == percentile(values["slow-b"].tolist(), 0.99).value
    assert m["slow-b"].error_rate == pytest.approx(10 / 250)
    assert m["slow-b"].errors_by_class == {"http_503": 10}
    assert m["fast-a"].retry_rate == pytest.approx(8 / 240)
    assert m["fast-a"].first_content["p50"].value == percentile([v + 15 for v in fast], 0.5).value
    chat = next(v for v in m["slow-b"].verdicts if v.interaction == "chat")
    assert chat.goodput_fraction == pytest.approx(float((values["slow-b"] <= 500).sum()) / 250)
    assert chat.p95_meets_target is False
    assert next(v for v in m["fast-a"].verdicts if v.interaction == "agent").p95_meets_target is True


def test_each_decision_cells_colour_level_is_the_level_its_text_shows(seeded):
    engine, _ = seeded
    cmp = compare(engine, NAMES)
    table, levels = cmp.decision, decision_levels(cmp.ranked)
    assert list(levels.columns) and set(levels.columns) < set(table.columns)
    shown = {(i, c): table.at[i, c].split(" · ")[0] for c in levels.columns for i in table.index}
    assert shown == {(i, c): LEVEL_LABELS[levels.at[i, c]] for c in levels.columns for i in levels.index}
    assert len(set(shown.values())) > 1  # the seeds meet some targets and miss others


def test_latest_cold_reading_prefers_the_worker_table_over_cold_samples(engine):
    seed_three(engine, n=240, only=("fast-a",))
    fast = compare(engine, ["fast-a"]).metrics[0]
    assert (fast.cold.cold_ms, fast.cold.warm_ms, fast.cold.source) == (21_000.0, 300.0, "latest cold sample")
    assert fast.cold.segment_ms == 20_700.0
    [info] = load_endpoints(engine, ["fast-a"])
    with session(engine) as s:
        s.add(
            ColdReadingRow(
                endpoint_id=info.id,
                vantage="office",
                state="done",
                idle_s=900,
                requested_at_ms=SEED_START_MS,
                cold_ttft_ms=45_000.0,
                warm_ttft_ms=350.0,
                cold_minus_warm_ms=44_650.0,
                completed_at_ms=SEED_START_MS + 1000,
            )
        )
    fast = compare(engine, ["fast-a"]).metrics[0]
    assert (fast.cold.cold_ms, fast.cold.segment_ms, fast.cold.source) == (45_000.0, 44_650.0, "cold reading")


def test_rtt_to_the_endpoints_region_fills_the_network_segment_and_can_decide_the_verdict(engine):
    seed_endpoint(engine, "far", median_ms=250, n=60, region="ap-far")
    insert_rtt_samples(
        engine,
        [
            SampleRecord(
                "ap-far", "ap-far.invalid:443", "server", "tcp-connect", ms, SEED_START_MS + i, vantage="office"
            )
            for i, ms in enumerate([190.0, 210.0, 230.0, 200.0, 220.0])
        ],
    )
    m = compare(engine, ["far"], vantage="office").metrics[0]
    assert m.rtt.median_ms == percentile([190.0, 210.0, 230.0, 200.0, 220.0], 0.5).value == 210.0
    inline = next(v for v in m.verdicts if v.interaction == "inline")
    assert inline.worksheet.network_ms.value == 210.0 and inline.worksheet.network_ms.source == Source.RTT
    assert inline.level == "error" and inline.deciding_segment == "network_ms"
    assert "Network" in inline.deciding_label


def test_vantage_and_date_range_select_the_samples(engine):
    seed_three(engine, n=240, only=("fast-a",))
    seed_endpoint(engine, "elsewhere", median_ms=400, n=30, seed=9, vantage="tokyo")
    empty = compare(engine, ["fast-a"], vantage="tokyo").metrics[0]
    assert empty.n_ok == 0 and empty.ttft["p95"].value is None
    since, until = SEED_START_MS, SEED_START_MS + DAY_MS
    one_day = compare(engine, ["fast-a"], since_ms=since, until_ms=until)
    assert one_day.samples["started_at_ms"].between(since, until - 1).all()
    assert 40 < one_day.metrics[0].n_ok < 130  # about a third of 240 samples spread over three days
    with pytest.raises(ValueError, match="must be before"):
        compare(engine, ["fast-a"], since_ms=until, until_ms=since)


def test_an_endpoint_without_enough_samples_ranks_last_and_is_never_called_faster(engine):
    seed_three(engine, n=240, only=("slow-b",))
    seed_endpoint(engine, "new-d", median_ms=100, n=12, seed=11)
    cmp = compare(engine, ["slow-b", "new-d"])
    assert [r.metrics.name for r in cmp.ranked] == ["slow-b", "new-d"]
    assert not cmp.metrics[1].p95_reliable
    assert cmp.ranked[1].vs_leader.verdict == "too few samples"


def test_unknown_endpoints_are_named(seeded):
    engine, _ = seeded
    with pytest.raises(UnknownEndpoint, match=r"nope.*known: fast-a, slow-b, twin-c"):
        compare(engine, ["fast-a", "nope"])


def test_cost_uses_typed_price_then_traffic(seeded):
    engine, _ = seeded
    infos = load_endpoints(engine, NAMES)
    cost = cost_basis(infos, None, {"fast-a": 0.5}, tokens_per_month=2e9)
    m = {x.name: x for x in compare(engine, NAMES, cost=cost).metrics}
    assert m["fast-a"].monthly_cost_usd == pytest.approx(1000.0)
    assert m["slow-b"].monthly_cost_usd is None  # no price typed, no matching preset, no Capacity inputs


def test_hour_of_day_follows_the_viewers_time_zone(engine):
    seed_endpoint(
        engine,
        "tz",
        median_ms=300,
        n=5,
        span_ms=60_000,
        start_ms=int(dt.datetime(2026, 11, 27, 23, 30, tzinfo=dt.UTC).timestamp() * 1000),
    )
    cmp = compare(engine, ["tz"])
    assert hourly_profile(cmp.samples, "UTC")["hour"].tolist() == [23]
    assert hourly_profile(cmp.samples, "Europe/Berlin")["hour"].tolist() == [0]
    since, until = day_range_ms(dt.date(2026, 11, 28), dt.date(2026, 11, 28), "Europe/Berlin")
    assert compare(engine, ["tz"], since_ms=since, until_ms=until).metrics[0].n_ok == 5


def test_worksheet_targets_drive_the_verdicts(seeded):
    engine, _ = seeded
    ws = Worksheet(targets_ms={"fast": 2000.0}, target_labels={"fast": "Batch"})
    [v] = compare(engine, ["slow-b"], worksheet=ws).metrics[0].verdicts
    assert (v.label, v.target_ms, v.p95_meets_target, v.goodput_fraction) == (
        "Batch",
        2000.0,
        True,
        pytest.approx(240 / 250),
    )
    assert np.isfinite(v.result.prefill_budget_ms)


def test_a_range_that_ends_today_reads_now_not_tomorrows_midnight():
    since, until = day_range_ms(dt.date(2026, 11, 27), dt.date(2026, 12, 2), "Europe/Berlin")
    during_dec_2 = until - 6 * 3_600_000  # 18:00 Berlin on the last day of the range
    assert format_window(since, until, tz="Europe/Berlin", now_ms=during_dec_2) == (
        "2026-11-27 00:00 Europe/Berlin → now"
    )
    after = until + 1
    assert format_window(since, until, tz="Europe/Berlin", now_ms=after) == (
        "2026-11-27 00:00 Europe/Berlin → 2026-12-03 00:00 Europe/Berlin"
    )
