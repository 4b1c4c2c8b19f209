"""`ttft-planner alerts add --worksheet`: the threshold is the p95 target the team planned in a saved worksheet; a
worksheet that does not exist is a one-line error naming the ones that do."""

from __future__ import annotations

from planner.store import alerts as store
from planner.store.worksheets import save_worksheet
from planner.worksheet.budget import Worksheet
from tests.support.alerts import run_cli


def test_a_rule_takes_its_threshold_from_a_saved_worksheet(sqlite_store_url, sqlite_engine):
    db_url, engine = sqlite_store_url, sqlite_engine
    plan = Worksheet(name="Team plan", interaction="chat")
    plan.targets_ms["chat"] = 350.0
    save_worksheet(engine, plan)
    out = run_cli(db_url, "alerts", "add", "plan p95", "--worksheet", "Team plan")
    assert out.returncode == 0, out.stderr
    (rule,) = store.load_rules(engine)
    assert (rule.threshold, rule.interaction) == (350.0, "worksheet: Team plan")
    listed = run_cli(db_url, "alerts", "list").stdout
    assert "p95_over > 350 ms" in listed
    bad = run_cli(db_url, "alerts", "add", "other", "--worksheet", "Nope")
    assert bad.returncode == 2 and "unknown p95 target 'worksheet: Nope'" in bad.stderr
    assert "worksheet: Team plan" in bad.stderr
