"""The Alerts page: a firing rule is shown firing with its history and the delivery that failed (and why); a rule
added in the form is stored; a webhook URL typed where its variable's NAME belongs is refused and not stored; a rerun
reads nothing from the database, yet a rule added or deleted on the page shows at once; an added rule is confirmed in
plain words and the form emptied, and the same rule added again is refused. Streamlit's cache clock is stopped
(cache_clock), so a reader's 5 s expire only when a test says so."""

from __future__ import annotations

import time

from sqlalchemy import event
from sqlalchemy.engine import Engine

from planner.alerts.evaluate import evaluate_all
from planner.alerts.rules import AlertKind
from planner.store import alerts as store
from planner.store import open_store
from planner.store.audit import audit_log
from tests.app.conftest import open_page, shown_table
from tests.support.alerts import slow_endpoint_with_rule


def _firing_rule_page(monkeypatch):
    monkeypatch.delenv("NOT_SET_HOOK", raising=False)
    eng = open_store()
    now_ms = int(time.time() * 1000)
    slow_endpoint_with_rule(eng, now_ms, webhook_env="NOT_SET_HOOK", name="chat p95", interaction="chat")
    evaluate_all(eng, now_ms)
    eng.dispose()
    return open_page("alerts")


def test_a_firing_rule_shows_its_state_history_and_the_failed_delivery_and_a_rerun_reads_nothing(
    monkeypatch, cache_clock
):
    at = _firing_rule_page(monkeypatch)
    assert [m.value for m in at.metric][:2] == ["1", "1"]  # one rule, one series firing
    table = at.table[0].value  # the series table wraps (st.table)
    assert table.iloc[0]["State"] == "● firing" and table.iloc[0]["Endpoint"] == "slow-b"
    assert table.iloc[0]["Threshold"] == "500 ms" and table.iloc[0]["Samples (n)"] == "30"
    history = next(shown_table(at, i) for i, t in enumerate(at.table) if "Message" in t.value.columns)
    assert history.iloc[0]["Message"].startswith("[FIRING] chat p95: p95 TTFT on slow-b")
    deliveries = next(shown_table(at, i) for i, t in enumerate(at.table) if "Last error" in t.value.columns)
    assert deliveries.iloc[0]["Last error"] == "the webhook variable NOT_SET_HOOK is not set"
    assert any("not delivered yet" in w.value for w in at.warning)
    assert any("`NOT_SET_HOOK` is **missing**" in c.value for c in at.caption)

    # A rerun without a change (e.g. the Delete… box ticked) reads nothing from the database.
    statements: list[str] = []

    def seen(conn, cursor, statement, *args):
        statements.append(statement)

    event.listen(Engine, "before_cursor_execute", seen)
    try:
        at.run()  # e.g. the Delete… box ticked: the page is drawn again from what it has read
    finally:
        event.remove(Engine, "before_cursor_execute", seen)
    assert not at.exception
    assert statements == []
    assert [m.value for m in at.metric] == ["1", "1", "1"]
    assert at.table[0].value.iloc[0]["State"] == "● firing"

    # Past the readers' 5 s the page reads again: what the worker writes shows within 5 s.
    cache_clock.now += 5.1
    event.listen(Engine, "before_cursor_execute", seen)
    try:
        at.run()
    finally:
        event.remove(Engine, "before_cursor_execute", seen)
    assert not at.exception
    assert statements


def test_adding_a_rule_in_the_form_stores_it_and_a_url_for_the_variable_is_refused():
    at = open_page("alerts")
    at.text_input[0].set_value("inline p95")
    at.selectbox(key="alert_interaction").set_value("inline")
    at.text_input(key="alert_webhook_env").set_value("https://hooks.slack.com/services/T/B/token")
    at.button[0].click().run()
    assert any("must be the NAME of an environment variable" in e.value for e in at.error)
    assert store.load_rules(open_store()) == []
    at.text_input(key="alert_webhook_env").set_value("TEAM_SLACK_WEBHOOK")
    at.button[0].click().run()
    assert not at.exception
    (rule,) = store.load_rules(open_store())
    assert (rule.name, rule.kind, rule.threshold) == ("inline p95", AlertKind.P95_OVER, 200.0)
    assert rule.interaction == "inline"
    assert rule.webhook_env == "TEAM_SLACK_WEBHOOK"


def test_a_rule_added_or_deleted_on_the_page_shows_at_once(monkeypatch, cache_clock):
    """With the cache clock stopped, nothing expires by itself: what shows, shows because the page's write forgot
    its readers."""
    at = _firing_rule_page(monkeypatch)
    at.text_input[0].set_value("inline p95")
    at.selectbox(key="alert_interaction").set_value("inline")
    next(b for b in at.button if b.label == "Add rule").click().run()
    assert not at.exception
    assert at.metric[0].value == "2"  # at once, not when the page's readers expire
    assert any(m.value.startswith("**inline p95**") for m in at.markdown)

    (rule,) = [r for r in store.load_rules(open_store()) if r.name == "chat p95"]
    at.checkbox(key=f"alert_del_confirm_{rule.id}").check().run()
    at.button(key=f"alert_del_{rule.id}").click().run()
    assert not at.exception
    assert [s.value for s in at.success] == ["Deleted rule chat p95 with its history and deliveries."]
    assert [m.value for m in at.metric] == ["1", "0", "0"]  # its series went with it
    assert not any(m.value.startswith("**chat p95**") for m in at.markdown)
    assert "History" not in [h.value for h in at.subheader]  # and its history


CHAT_RULE = "p95 TTFT over 500 ms (Chat panel / single-file edit target)"


def _add(at, name: str, *, interaction: str = "", threshold: float = 0.0) -> None:
    at.text_input(key="alert_name").set_value(name)
    at.selectbox(key="alert_interaction").set_value(interaction)
    at.number_input(key="alert_threshold").set_value(threshold)
    next(b for b in at.button if b.label == "Add rule").click().run()
    assert not at.exception, [e.value for e in at.exception]


def test_an_added_rule_is_confirmed_in_plain_words_the_form_empties_and_the_same_rule_is_refused():
    at = open_page("alerts")
    _add(at, "chat p95", interaction="chat")
    assert [s.value for s in at.success] == [f"Added rule chat p95: {CHAT_RULE}."]
    # the form is empty again, ready for the next rule
    assert at.text_input(key="alert_name").value == "" and at.selectbox(key="alert_interaction").value == ""
    (label,) = [m.value for m in at.markdown if m.value.startswith("**chat p95**")]
    assert label.startswith(f"**chat p95** — {CHAT_RULE} on every endpoint;") and "p95_over" not in label
    assert audit_log(open_store()).iloc[0]["detail"] == f"added: {CHAT_RULE}"  # the Admin page's detail too

    # The same rule again under another name, with the target typed out: refused, naming the rule it repeats.
    _add(at, "chat p95 again", threshold=500.0)
    assert any("The alert rule “chat p95” already does this" in e.value for e in at.error), [e.value for e in at.error]
    assert not at.success
    # A threshold that is not the chosen target's would be labelled with a target it is not: refused.
    _add(at, "chat 200", interaction="chat", threshold=200.0)
    assert any("threshold 200 ms is not the chat target (500 ms)" in e.value for e in at.error)
    assert [r.name for r in store.load_rules(open_store())] == ["chat p95"]

    _add(at, "inline p95", interaction="inline")  # after a refusal, a new rule still goes in
    assert [s.value for s in at.success] == ["Added rule inline p95: p95 TTFT over 200 ms (Inline completion target)."]
    assert [r.name for r in store.load_rules(open_store())] == ["chat p95", "inline p95"]
