"""planner.probes.rtt_rank: the one ranking and note rule of the Regions page's table and `ttft-planner rtt`."""

from __future__ import annotations

import math

from planner.probes.rtt import RttResult
from planner.probes.rtt_rank import (
    ANYCAST_NOTE,
    failure_text,
    proxy_note,
    ranked,
    row_note,
    row_outcome,
    row_status,
)


def test_fastest_median_first_no_median_last_ties_by_label():
    rows = [
        ("c", None),
        ("b", 20.0),
        ("z", math.nan),
        ("a", 20.0),
        ("d", 5.0),
    ]
    order = ranked(rows, median_ms=lambda r: r[1], label=lambda r: r[0])
    assert [r[0] for r in order] == ["d", "a", "b", "c", "z"]


def test_a_failure_reads_class_then_detail():
    assert failure_text("timeout", "no answer in 3 s") == "timeout: no answer in 3 s"
    assert failure_text("refused", None) == "refused:"
    assert failure_text(None, "ignored") == failure_text("", "") == ""


def test_status_and_outcome_of_a_table_row():
    assert row_status(None, None, 5, anycast=False, proxy=None) == "ok"
    assert row_status(None, None, 0, anycast=False, proxy=None) == "no samples"
    assert row_status("timeout", "slow", 0, anycast=True, proxy="http://p:1") == (
        f"timeout: slow ({proxy_note('http://p:1')}; {ANYCAST_NOTE})"
    )
    assert row_status(None, None, 3, anycast=True, proxy=None).startswith("ok (")  # the page colours "ok…" as fine
    assert row_outcome(None, 3) == "ok" and row_outcome(None, 0) == "no samples"
    assert row_outcome("dns", 0) == "dns"


def test_the_cli_note_says_nothing_for_a_fine_row():
    assert row_note(None, None, anycast=False, proxy=None) == ""
    assert row_note(None, None, anycast=True, proxy=None) == ANYCAST_NOTE
    assert row_note("tls", "bad certificate", anycast=False, proxy="http://p:1") == (
        "tls: bad certificate; TCP figures are to the proxy http://p:1"
    )


def test_the_cli_table_ranks_and_notes_by_the_rule(capsys):
    from planner.cli.rtt import _print_table

    results = [
        RttResult(region_id="slow", target="t", connect_ms=[30.0, 30.0]),
        RttResult(region_id="down", target="t", error_class="refused", error_detail="port closed", proxy="http://p:1"),
        RttResult(region_id="fast", target="t", connect_ms=[4.0, 6.0]),
        RttResult(region_id="also-slow", target="t", connect_ms=[30.0]),
        RttResult(region_id="edge", target="t", connect_ms=[50.0]),
    ]
    _print_table(results, {"edge"})
    rows = capsys.readouterr().out.splitlines()[1 : 1 + len(results)]
    assert [line.split()[0] for line in rows] == ["fast", "also-slow", "slow", "edge", "down"]
    assert rows[0].rstrip().endswith("—")  # a fine row: no note
    assert rows[3].endswith(ANYCAST_NOTE)
    assert rows[-1].endswith("refused: port closed; TCP figures are to the proxy http://p:1")
