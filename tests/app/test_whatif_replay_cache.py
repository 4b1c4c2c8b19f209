"""AppTest: the What-if replay runs once per set of inputs — a rerun that changes none of them (a click elsewhere)
reuses it; a changed input replays again. Counted, never timed."""

from __future__ import annotations

import planner.whatif.results as results
from tests.app.test_whatif import CHEAP, PRICEY, _replay_stored_log


def test_an_unrelated_click_does_not_replay_again(app, monkeypatch):
    calls: list[int] = []
    real = results.compare

    def counting(trace, *args, **kwargs):  # the real replay, counted
        calls.append(trace.n)
        return real(trace, *args, **kwargs)

    monkeypatch.setattr(results, "compare", counting)
    _replay_stored_log(app, f"{CHEAP}\n{PRICEY}")
    assert not app.exception, app.exception
    assert len(calls) == 1
    table_before = app.markdown  # what the page showed
    app.selectbox(key="wi_use_pick").set_value("ded").run()  # pick another candidate for the worksheet
    app.run()  # and a plain rerun (a click on another widget)
    assert not app.exception, app.exception
    assert len(calls) == 1
    assert [m.value for m in app.markdown] != [] and len(app.markdown) == len(table_before)
    app.number_input(key="wi_growth").set_value(2.0).run()  # a changed input: replayed again
    assert len(calls) == 2 and calls[1] == 2 * calls[0]
