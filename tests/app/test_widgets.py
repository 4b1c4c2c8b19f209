"""ttft_planner_app.widgets' table cells: inert Markdown that can wrap (the 1,400 px walk checks the drawn table)."""

from ttft_planner_app.widgets import _cell


def test_a_long_url_in_a_cell_can_break_and_stays_inert():
    cell = _cell("img ![status](http://attacker.invalid/beacon.png)")
    assert "\\!\\[status\\]" in cell  # no image: the Markdown is escaped
    assert "\u200b" in cell and cell.replace("\u200b", "").endswith("(`http://attacker.invalid/beacon.png`)")


def test_ordinary_words_are_left_whole():
    assert _cell("acme-sim-eu") == "acme-sim-eu"
    assert _cell("Over budget · 5% within target · decided by Prefill") == (
        "Over budget · 5% within target · decided by Prefill"
    )
