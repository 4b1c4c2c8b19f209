"""Issue 12 regressions in the comparison: each endpoint judged only with its own figures, no data is never OK,
the ranking rule, the counts next to their own names, the practical-equivalence margin, one sample definition."""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.compare import compare, report_html, report_markdown
from planner.compare.bootstrap import EQUIVALENT, Margin, bootstrap_difference
from planner.percentiles import percentile
from planner.store.probes import insert_samples
from planner.worksheet.budget import Worksheet
from planner.worksheet.provenance import Figure, Source
from planner.worksheet.segment_figures import queueing_segment
from tests.support.compare_seed import SEED_START_MS, seed_endpoint
from tests.support.probe_rows import slot_row

HOUR_MS = 3_600_000


def _borrowed_worksheet() -> Worksheet:
    """A worksheet whose queueing and cold start were handed over from *another* endpoint (acme-sim-eu)."""
    ws = Worksheet()
    ws = ws.with_figure("queue_ms", Figure(823.0, "ms", Source.PROBE, "acme-sim-eu @ default vantage", 400, "7 days"))
    return ws.with_figure("cold_ms", Figure(9_000.0, "ms", Source.COLD_READING, "acme-sim-eu · cold − warm", 1))


def test_a_segment_an_endpoint_lacks_is_missing_never_borrowed(sqlite_engine):
    # "own" has a cold reading and a day of samples in every hour; "bare" has 12 samples and no cold reading.
    seed_endpoint(sqlite_engine, "own", median_ms=300, n=24 * 30, seed=1, cold_ms=5_300.0, span_ms=86_400_000)
    seed_endpoint(sqlite_engine, "bare", median_ms=300, n=12, seed=2)
    cmp = compare(sqlite_engine, ["own", "bare"], worksheet=_borrowed_worksheet())
    m = {x.name: x for x in cmp.metrics}
    own_chat = next(v for v in m["own"].verdicts if v.interaction == "chat")
    assert own_chat.worksheet.cold_ms.value == 5_300.0 - 300.0  # its own cold − warm
    assert own_chat.worksheet.queue_ms.source == Source.PROBE and "own" in own_chat.worksheet.queue_ms.detail
    assert own_chat.missing == [] and own_chat.result is not None
    bare_chat = next(v for v in m["bare"].verdicts if v.interaction == "chat")
    assert bare_chat.missing == ["queue_ms", "cold_ms"] and bare_chat.result is None and bare_chat.level == "missing"
    text = report_html(cmp)
    assert "acme-sim-eu" not in text  # the borrowed figures appear nowhere
    md = report_markdown(cmp)
    bare_rows = [line for line in md.splitlines() if line.startswith("| bare |")]
    assert bare_rows and all(
        "missing — not measured for this endpoint" in line and "No verdict" in line
        for line in bare_rows
        if "Chat" in line
    )


def test_a_typed_worksheet_segment_is_used_and_labelled_as_typed(sqlite_engine):
    seed_endpoint(sqlite_engine, "bare", median_ms=300, n=30, seed=2)
    cmp = compare(sqlite_engine, ["bare"], worksheet=Worksheet())  # every segment typed
    v = next(v for v in cmp.metrics[0].verdicts if v.interaction == "chat")
    assert v.missing == [] and v.worksheet.cold_ms.value == 0.0
    assert "0 ms (worksheet's typed value)" in report_markdown(cmp)


def test_an_endpoint_without_samples_is_no_data_never_ok(sqlite_engine):
    seed_endpoint(sqlite_engine, "full", median_ms=300, n=60, seed=1)
    seed_endpoint(sqlite_engine, "empty", median_ms=300, n=0, seed=2)
    cmp = compare(sqlite_engine, ["empty", "full"])
    row = cmp.decision.set_index("endpoint").loc["empty"]
    cells = [str(v) for k, v in row.items() if str(k).endswith(" ms)")]
    assert cells and all(c.startswith("No data") for c in cells)
    assert not any(c.startswith("OK") for c in cells)
    assert pd.isna(row["rank"]) and [r.metrics.name for r in cmp.ranked][-1] == "empty"
    md = report_markdown(cmp)
    assert "nan" not in md.lower().replace("nanos", "") and "None" not in md


def test_the_ranking_rule_puts_too_few_samples_last_and_says_so(sqlite_engine):
    seed_endpoint(sqlite_engine, "few-fast", median_ms=100, n=17, seed=1)
    seed_endpoint(sqlite_engine, "many-slow", median_ms=400, n=29, seed=2)
    cmp = compare(sqlite_engine, ["few-fast", "many-slow"])
    assert [r.metrics.name for r in cmp.ranked] == ["many-slow", "few-fast"]
    text = report_html(cmp)
    assert "fewer than 20 samples ranks after every endpoint with enough samples" in text
    assert "“Targets met” counts the interaction types whose measured TTFT p95" in text
    [d] = cmp.differences
    # The sentence names each n next to its own endpoint (it once read "n=29 vs n=17" the wrong way round).
    assert "n=17 for few-fast, n=29 for many-slow" in d.statement()


def test_practical_equivalence_margin_decides_faster_equivalent_or_cannot_tell():
    rng = np.random.default_rng(4)
    twin_a = np.round(300 + rng.normal(0, 0.3, 400), 1)
    twin_b = twin_a + 1.0  # statistically separable by 1 ms, practically the same
    d = bootstrap_difference(twin_a, twin_b, a="twin-a", b="twin-b")
    assert d.low_ms > 0  # the old rule would have said "twin-a is faster"
    assert d.verdict == EQUIVALENT and "practically equivalent" in d.statement()
    assert "±9 ms" in d.statement()  # max(5 ms, 3% of 300 ms)
    far = bootstrap_difference(twin_a, twin_a + 40.0, a="twin-a", b="slow")
    assert far.verdict == "twin-a is faster"
    tight = bootstrap_difference(twin_a, twin_b, a="twin-a", b="twin-b", margin=Margin(abs_ms=0.1, fraction=0.0))
    assert tight.verdict == "twin-a is faster"  # the margin is settable
    straddle = bootstrap_difference(twin_a, twin_a + 9.0, a="twin-a", b="b9", margin=Margin(abs_ms=9.0, fraction=0))
    assert straddle.verdict == "cannot yet tell apart"


def test_compare_counts_the_same_samples_as_the_probes_page(sqlite_engine):
    from planner.store import probe_queries as pq

    values = seed_endpoint(sqlite_engine, "one", median_ms=300, n=27, seed=1, cold_ms=9_000.0)
    [info] = [e for e in pq.series_keys(sqlite_engine) if e.endpoint_name == "one"]
    # a manual probe counts on both pages; a deliberately cached series on neither
    insert_samples(
        sqlite_engine,
        [
            slot_row(info.endpoint_id, SEED_START_MS + 5, 310.0, kind="manual", vantage="office"),
            slot_row(info.endpoint_id, SEED_START_MS + 6, 5.0, kind="manual", vantage="office", cached_series=True),
        ],
    )
    cmp = compare(sqlite_engine, ["one"], vantage="office")
    key = pq.SeriesKey(info.endpoint_id, "one", "office")
    probes = pq.summary(sqlite_engine, key, SEED_START_MS - 1, SEED_START_MS + 4 * 86_400_000)
    assert cmp.metrics[0].n_ok == probes["n"] == 27 + 1  # not the cold/warm pair, not the cached series
    assert cmp.metrics[0].ttft["p95"].value == probes["p95_ms"] == percentile([*values, 310.0], 0.95).value


def test_segment1_needs_two_distinct_hours_and_says_why():
    one = pd.DataFrame(
        {"hour": range(24), "n": [60] + [0] * 23, "p50_ms": [100.0] + [None] * 23, "p95_ms": [9_000.0] + [None] * 23}
    )
    q = queueing_segment(one)
    assert q.value_ms is None and "only 00:00 has" in q.reason and "2 different hours" in q.reason
    two = pd.DataFrame({"hour": [3, 14], "n": [25, 25], "p50_ms": [100.0, 300.0], "p95_ms": [5_000.0, 700.0]})
    q = queueing_segment(two)
    # The quiet hour (03:00) also has the largest p95: worst and quietest are one hour (issue 44's rule).
    assert (q.quiet_hour, q.worst_hour, q.value_ms) == (3, 3, 4_900.0)
