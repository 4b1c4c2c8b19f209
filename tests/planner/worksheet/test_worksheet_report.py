"""The Markdown export a lead forwards: the title says when the inputs are not the saved plan, times are in the
reader's zone, and verdicts are words."""

from __future__ import annotations

from planner.store import open_store
from planner.store.worksheets import save_worksheet
from planner.worksheet.budget import Worksheet
from planner.worksheet.provenance import Figure, Source
from planner.worksheet.report import to_markdown
from tests.support.store_template import migrated_sqlite

MEASURED_AT_MS = 1_764_507_600_000  # 2025-11-30 13:00 UTC


def _sheet(**kw) -> Worksheet:
    cold = Figure(7_499.0, "ms", Source.COLD_READING, detail="sim-local", n=3, measured_at_ms=MEASURED_AT_MS)
    return Worksheet(name="Team plan", cold_ms=cold, **kw)


def test_the_title_says_edited_when_the_inputs_are_not_the_saved_ones():
    assert to_markdown(_sheet()).splitlines()[0] == "# TTFT worksheet: Team plan"
    assert to_markdown(_sheet(), saved=False).splitlines()[0] == "# TTFT worksheet: Team plan (edited, not saved)"


def test_measured_times_are_in_the_readers_zone_and_verdicts_in_words():
    text = to_markdown(_sheet(), tz="Europe/Berlin")
    assert "2025-11-30 14:00 Europe/Berlin" in text and "UTC" not in text
    assert "**Verdict (over budget):**" in text  # a 7.5 s cold start eats the 500 ms chat target
    rows = [line for line in text.splitlines() if line.startswith("| ") and line.endswith(" |")]
    assert not any(line.endswith((" warn |", " ok |", " error |")) for line in rows)


def test_a_saved_worksheet_reads_back_equal_so_the_page_can_tell_saved_from_edited(tmp_path):
    # the page calls the export "saved" when load_worksheet(name).to_dict() == the session's worksheet.to_dict()
    from planner.store.worksheets import load_worksheet

    eng = open_store(migrated_sqlite(tmp_path / "planner.db"))
    save_worksheet(eng, _sheet())
    assert load_worksheet(eng, "Team plan").to_dict() == _sheet().to_dict()
    assert load_worksheet(eng, "Team plan").to_dict() != _sheet(network_ms=Figure.typed(35, "ms")).to_dict()
    eng.dispose()
