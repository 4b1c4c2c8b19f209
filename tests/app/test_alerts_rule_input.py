"""The Alerts page's form refuses a rule whose name holds a line break or whose e-mail list is not addresses, naming
the field, and stores nothing (the same check as `ttft-planner alerts add`: planner.alerts.rules.build_rule)."""

from __future__ import annotations

import pytest

from planner.store import alerts as store
from planner.store import open_store
from tests.app.conftest import open_page


@pytest.mark.parametrize(
    ("key", "typed", "named"),
    [
        ("alert_name", "chat\r\np95", "name 'chat\\r\\np95'"),
        ("alert_email", "oncall@example.com\nBcc: x@evil.example", "e-mail 'oncall@example.com\\nBcc"),
        ("alert_email", "oncall@example.com, the on-call team", "'the on-call team' is not an e-mail address"),
    ],
)
def test_the_form_refuses_a_line_break_or_a_non_address_naming_the_field(key, typed, named):
    at = open_page("alerts")
    at.text_input(key="alert_name").set_value("inline p95")
    at.selectbox(key="alert_interaction").set_value("inline")
    at.text_input(key=key).set_value(typed)
    next(b for b in at.button if b.label == "Add rule").click().run()
    assert not at.exception
    assert any(named in e.value.replace("\\\\", "\\") for e in at.error), [e.value for e in at.error]
    assert store.load_rules(open_store()) == []
