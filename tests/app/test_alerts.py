"""The Alerts page: a firing rule is shown firing with its history and the delivery that failed (and why); a rule
added in the form is stored; a webhook URL typed where its variable's NAME belongs is refused and not stored."""

from __future__ import annotations

import time

from streamlit.testing.v1 import AppTest

from planner.alerts.evaluate import evaluate_all
from planner.alerts.rules import AlertKind
from planner.store import alerts as store
from planner.store import open_store
from tests.app.conftest import ROUTER
from tests.support.alerts import slow_endpoint_with_rule


def _page() -> AppTest:
    at = AppTest.from_file(ROUTER, default_timeout=60)
    at.run()
    at.switch_page("views/alerts.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_a_firing_rule_shows_its_state_history_and_the_failed_delivery(monkeypatch):
    monkeypatch.delenv("NOT_SET_HOOK", raising=False)
    eng = open_store()
    now_ms = int(time.time() * 1000)
    slow_endpoint_with_rule(eng, now_ms, webhook_env="NOT_SET_HOOK", name="chat p95", interaction="chat")
    evaluate_all(eng, now_ms)
    eng.dispose()
    at = _page()
    assert [m.value for m in at.metric][:2] == ["1", "1"]  # one rule, one series firing
    table = at.dataframe[0].value
    assert table.iloc[0]["State"] == "🔴 firing" and table.iloc[0]["Endpoint"] == "slow-b"
    assert table.iloc[0]["Threshold"] == "500 ms" and table.iloc[0]["Samples (n)"] == "30"
    history = at.dataframe[1].value
    assert history.iloc[0]["Message"].startswith("[FIRING] chat p95: p95 TTFT on slow-b")
    deliveries = at.dataframe[2].value
    assert deliveries.iloc[0]["Last error"] == "the webhook variable NOT_SET_HOOK is not set"
    assert any("not delivered yet" in w.value for w in at.warning)
    assert any("`NOT_SET_HOOK` is **missing**" in c.value for c in at.caption)


def test_adding_a_rule_in_the_form_stores_it_and_a_url_for_the_variable_is_refused():
    at = _page()
    at.text_input[0].set_value("inline p95")
    at.selectbox(key="alert_interaction").set_value("inline")
    at.text_input(key="alert_webhook_env").set_value("https://hooks.slack.com/services/T/B/token")
    at.button[0].click().run()
    assert any("give the NAME of an environment variable" in e.value for e in at.error)
    assert store.load_rules(open_store()) == []
    at.text_input(key="alert_webhook_env").set_value("TEAM_SLACK_WEBHOOK")
    at.button[0].click().run()
    assert not at.exception
    (rule,) = store.load_rules(open_store())
    assert (rule.name, rule.kind, rule.threshold) == ("inline p95", AlertKind.P95_OVER, 200.0)
    assert rule.interaction == "inline"
    assert rule.webhook_env == "TEAM_SLACK_WEBHOOK"
