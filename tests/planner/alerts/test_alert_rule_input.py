"""An alert rule's text is refused at `alerts add` (planner.alerts.rules.build_rule, so the CLI and the Alerts page
alike) with the field named: a name is one line, an e-mail list is addresses, a webhook variable is a NAME. A rule
kept by an older version that took such text fails where it is sent, each delivery with its error recorded and
retried, never a traceback: not in `alerts test`, not in the worker's log, and the healthy rule beside it still
delivers. Real receivers: a local webhook receiver and a local SMTP server (aiosmtpd)."""

from __future__ import annotations

import logging

import pandas as pd
import pytest

from planner.alerts.notify import Notice, send
from planner.alerts.rules import AlertKind, Rule, Transition, build_rule
from planner.store import alerts as store
from planner.worker.team import TeamHooks
from tests.support.alerts import alert_receivers, run_cli, slow_endpoint_with_rule
from tests.support.worker_driver import HANG_GUARD_S

NOW_MS = 1_800_000_000_000
SLACK_URL = "https://hooks.slack.com/services/T000/B000/XXXXXXXXsecretXXXX"


def _rule(**typed):
    fields = {"threshold": 500.0, "window_min": 15, "for_min": 5, "min_n": 20, **typed}
    return build_rule(fields.pop("name", "chat p95"), AlertKind.P95_OVER, **fields)


@pytest.mark.parametrize(
    ("typed", "named"),
    [
        ({"name": "chat p95\r\nBcc: x@evil.example"}, "name 'chat p95\\r\\nBcc: x@evil.example'"),
        ({"name": "chat\np95"}, "name 'chat\\np95'"),
        ({"name": "x" * 121}, "name: 121 characters"),
        ({"email_to": "oncall@example.com\r\nBcc: x@evil.example"}, "e-mail 'oncall@example.com\\r\\nBcc"),
        ({"email_to": "oncall@example.com, the on-call team"}, "e-mail: 'the on-call team' is not an e-mail address"),
        ({"email_to": "admin@example.com@evil.example"}, "e-mail: 'admin@example.com@evil.example' is not"),
        ({"email_to": "oncall"}, "e-mail: 'oncall' is not an e-mail address"),
        ({"webhook_env": "TEAM\r\nHOOK"}, "webhook variable must be the NAME"),
    ],
)
def test_build_rule_refuses_line_breaks_and_non_addresses_naming_the_field(typed, named):
    with pytest.raises(ValueError) as err:
        _rule(**typed)
    assert named in str(err.value) and "\n" not in str(err.value) and "\r" not in str(err.value)


def test_a_webhook_url_typed_for_its_variable_is_refused_without_echoing_it():
    with pytest.raises(ValueError) as err:
        _rule(webhook_env=SLACK_URL)
    assert "webhook variable" in str(err.value) and "secret" not in str(err.value)


def test_addresses_are_kept_one_list_and_a_good_rule_is_built():
    rule = _rule(email_to=" oncall@example.com ,lead+ttft@platform.example.com,, ", webhook_env=" TEAM_HOOK ")
    assert rule.email_to == "oncall@example.com, lead+ttft@platform.example.com"
    assert rule.webhook_env == "TEAM_HOOK"


@pytest.mark.parametrize(
    ("option", "value", "named"),
    [
        ("NAME", "chat\r\np95", "name 'chat\\r\\np95'"),
        ("--email", "oncall@example.com\nBcc: x@evil.example", "e-mail 'oncall@example.com\\nBcc"),
        ("--email", "a@b@platform.example.com", "'a@b@platform.example.com' is not an e-mail address"),
    ],
)
def test_alerts_add_refuses_with_one_line_naming_the_field_and_stores_nothing(
    sqlite_store_url, sqlite_engine, option, value, named
):
    args = ["alerts", "add", value if option == "NAME" else "chat p95", "--threshold", "500"]
    if option != "NAME":
        args += [option, value]
    out = run_cli(sqlite_store_url, *args)
    assert out.returncode == 2 and named in out.stderr, out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert store.load_rules(sqlite_engine) == []


@pytest.fixture
def receivers(monkeypatch):
    with alert_receivers(monkeypatch) as pair:
        yield pair


# What an older version stored unchecked: a name and an e-mail list holding CR/LF, and a webhook variable whose URL
# holds one (the variable is the deployment's, so nothing at `alerts add` could have refused it).
OLD_NAME = "chat\r\np95"
OLD_EMAILS = "oncall@example.com\r\nBcc: x@evil.example"


def _old_rule(engine, **fields) -> None:
    rule = Rule(name=OLD_NAME, kind=AlertKind.P95_OVER, threshold=500.0, window_s=900, for_s=0, min_n=20, **fields)
    store.add_rule(engine, rule, NOW_MS)


def test_alerts_test_on_a_rule_stored_unchecked_says_each_failure_in_one_line(
    sqlite_store_url, sqlite_engine, receivers, monkeypatch
):
    hook, box = receivers
    monkeypatch.setenv("BROKEN_HOOK", f"{hook.url}\r\nX-Injected: 1")
    _old_rule(sqlite_engine, webhook_env="BROKEN_HOOK", email_to=OLD_EMAILS)
    out = run_cli(sqlite_store_url, "alerts", "test", OLD_NAME)
    assert out.returncode == 1 and "Traceback" not in out.stderr + out.stdout
    failures = out.stderr.strip().splitlines()
    assert len(failures) == 2, out.stderr
    assert failures[0].startswith("webhook BROKEN_HOOK: failed: the webhook URL in BROKEN_HOOK is not a valid URL")
    assert failures[1].startswith("email ") and "is not an e-mail address" in failures[1]
    assert "secret-token" not in out.stderr and hook.posts == 0 and box.messages == []


def test_a_name_stored_with_a_line_break_still_mails_with_a_one_line_subject(receivers):
    hook, box = receivers
    rule = Rule(name=OLD_NAME, kind=AlertKind.P95_OVER, threshold=500.0, email_to="oncall@example.com")
    send("email", rule.email_to, Notice(rule, Transition.FIRING, "slow-b", "", 900.0, 30, NOW_MS))
    (mail,) = box.messages
    subject = next(line for line in mail.splitlines() if line.startswith("Subject:"))
    assert subject == "Subject: [FIRING] chat p95 on slow-b"


def test_in_the_worker_a_bad_rules_deliveries_fail_with_their_error_and_no_traceback(
    sqlite_engine, receivers, caplog, monkeypatch
):
    hook, box = receivers
    monkeypatch.setenv("BROKEN_HOOK", f"{hook.url}\nX-Injected: 1")
    slow_endpoint_with_rule(sqlite_engine, NOW_MS, name="healthy", email_to="oncall@example.com")
    _old_rule(sqlite_engine, webhook_env="BROKEN_HOOK", email_to=OLD_EMAILS)
    team = TeamHooks(sqlite_engine, "")
    with caplog.at_level(logging.INFO, logger="planner"):
        team.tick(NOW_MS, holds_lease=True)
        assert team.delivering is not None
        team.delivering.join(HANG_GUARD_S)
        assert not team.delivering.is_alive(), "the delivery pass hung"
    by_rule = {}
    for row in store.deliveries(sqlite_engine).to_dict("records"):
        by_rule.setdefault(row["target"], row)
    # the healthy rule delivered on both channels
    assert by_rule["TEAM_HOOK"]["delivered_at_ms"] == NOW_MS and len(hook.bodies) == 1
    assert by_rule["oncall@example.com"]["delivered_at_ms"] == NOW_MS and len(box.messages) == 1
    # the bad rule's: attempt 1, not delivered, its error kept and a retry after the backoff
    for target, why in (("BROKEN_HOOK", "is not a valid URL"), (OLD_EMAILS, "is not an e-mail address")):
        row = by_rule[target]
        assert row["attempts"] == 1 and pd.isna(row["delivered_at_ms"]) and why in row["last_error"], row
        assert row["next_attempt_at_ms"] > NOW_MS
    assert not [r for r in caplog.records if r.exc_info], "a traceback in the worker's log"
    assert sum("alert delivery failed" in r.getMessage() for r in caplog.records) == 2


def test_alerts_list_shows_a_rule_stored_unchecked_on_one_line_and_never_its_webhook_url(
    sqlite_store_url, sqlite_engine
):
    """An older version kept a name with a line break and the webhook's URL where its variable's name goes: `alerts
    list` prints the rule on one line and hides the URL, in text and in --json."""
    _old_rule(sqlite_engine, webhook_env=SLACK_URL, email_to="oncall@example.com")
    out = run_cli(sqlite_store_url, "alerts", "list")
    assert out.returncode == 0 and "Traceback" not in out.stderr
    assert len(out.stdout.strip().splitlines()) == 1, out.stdout
    assert out.stdout.startswith("chat\\r\\np95: ")
    as_json = run_cli(sqlite_store_url, "alerts", "list", "--json")
    assert as_json.returncode == 0
    for text in (out.stdout, as_json.stdout):
        assert "secret" not in text and "hooks.slack.com" not in text, text
