"""An alert rule is stored once: the store refuses a rule whose name is taken or that would do exactly what a stored
one does (same endpoint, condition, window, for-duration, min n, clear margin and channels), whoever adds it — the
page, the CLI, or two at once on their own connections — on SQLite and on PostgreSQL."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest

from planner.alerts.rules import AlertKind, Rule
from planner.store import alerts as store
from planner.store import open_store

RULE = Rule(name="chat p95", kind=AlertKind.P95_OVER, threshold=500.0, interaction="chat", webhook_env="TEAM_HOOK")
HANG_S = 60.0  # a hang guard for the racing threads, never a measurement


def test_a_rule_that_repeats_a_stored_one_is_refused_naming_it(engine):
    store.add_rule(engine, RULE, 1)
    with pytest.raises(store.DuplicateRule, match="“chat p95” already does this"):
        store.add_rule(engine, replace(RULE, name="chat p95 again"), 2)
    with pytest.raises(store.DuplicateRule, match="“chat p95” already does this"):  # typed, not from the target
        store.add_rule(engine, replace(RULE, name="chat 500", interaction=""), 3)
    with pytest.raises(store.DuplicateRule, match="named “chat p95” exists already: choose another name"):
        store.add_rule(engine, replace(RULE, threshold=800.0), 4)
    # one field apart is another rule
    store.add_rule(engine, replace(RULE, name="chat 800", threshold=800.0, interaction=""), 5)
    store.add_rule(engine, replace(RULE, name="chat p95 by mail", webhook_env="", email_to="oncall@example.com"), 6)
    store.add_rule(engine, replace(RULE, name="chat p95 slack", webhook_format="slack"), 7)
    store.add_rule(engine, replace(RULE, name="chat p95 held", for_s=600.0), 8)
    assert [r.name for r in store.load_rules(engine)] == [
        "chat 800",
        "chat p95",
        "chat p95 by mail",
        "chat p95 held",
        "chat p95 slack",
    ]


def test_two_identical_rules_added_at_once_are_stored_once(store_url):
    page, cli = open_store(store_url), open_store(store_url)  # two writers, each on its own connection
    barrier, outcomes = threading.Barrier(2), {}

    def add(engine, name: str) -> None:
        barrier.wait(HANG_S)
        try:
            store.add_rule(engine, replace(RULE, name=name), 1)
            outcomes[name] = "added"
        except store.DuplicateRule as exc:
            outcomes[name] = str(exc)

    try:
        threads = [threading.Thread(target=add, args=(e, n)) for e, n in ((page, "by the page"), (cli, "by the CLI"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(HANG_S)
        added = [o for o in outcomes.values() if o == "added"]
        refused = [o for o in outcomes.values() if o != "added"]
        assert len(added) == 1 and len(refused) == 1 and "already does this" in refused[0], outcomes
        assert len(store.load_rules(page)) == 1
    finally:
        page.dispose()
        cli.dispose()
