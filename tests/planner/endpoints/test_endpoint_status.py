"""planner.endpoints.status (the Endpoints page's Status column and failure warnings) and
planner.endpoints.registry.form_message (an EndpointError in the form's words)."""

from __future__ import annotations

import pytest

from planner.endpoints.registry import EndpointError, form_message, validate
from planner.endpoints.status import (
    FAILING_WARNING_AFTER,
    at_vantage,
    endpoint_state,
    failing_warnings,
)
from planner.store.endpoints import EndpointRow
from planner.store.worker import EndpointState

UNSET_KEY = "ACME_STATUS_KEY_NOBODY_SETS_FOR_TEST"


def _row(**kw) -> EndpointRow:
    fields = dict(name="acme", base_url="http://127.0.0.1:9/v1", model="m", created_at_ms=0, updated_at_ms=0)
    return EndpointRow(**(fields | kw))


def _report(state, vantage="", failures=0, detail=""):
    return {"state": state, "vantage": vantage, "consecutive_failures": failures, "detail": detail}


def test_state_reads_each_vantage_or_not_probed_yet():
    ep = _row()
    assert endpoint_state(ep, []) == "not probed yet"
    assert endpoint_state(ep, [_report("ok"), _report("failing", "eu")]) == "ok, failing @ eu"
    assert endpoint_state(ep, [_report(EndpointState.PAUSED, "us")]) == "paused @ us"


def test_a_missing_key_or_a_disabled_endpoint_wins_over_any_report(monkeypatch):
    monkeypatch.delenv(UNSET_KEY, raising=False)
    assert endpoint_state(_row(api_key_env=UNSET_KEY), [_report("ok")]) == "key missing"
    assert endpoint_state(_row(api_key_env=UNSET_KEY, enabled=False), []) == "key missing"
    assert endpoint_state(_row(enabled=False), [_report("ok")]) == "disabled"
    monkeypatch.setenv(UNSET_KEY, "sk-test")
    assert endpoint_state(_row(api_key_env=UNSET_KEY), [_report("ok")]) == "ok"


def test_a_failing_endpoint_is_warned_about_from_the_named_count():
    assert FAILING_WARNING_AFTER == 3
    ep = _row(name="acme")
    reports = [
        _report("failing", "", FAILING_WARNING_AFTER - 1, "blip"),
        _report("failing", "eu", FAILING_WARNING_AFTER, "HTTP 500"),
        _report("ok", "us", 0),
        _report("failing", "ap", 7, "timeout"),
    ]
    assert failing_warnings(ep, reports) == [
        "acme @ eu: 3 failures in a row — HTTP 500",
        "acme @ ap: 7 failures in a row — timeout",
    ]
    assert at_vantage("acme", "") == "acme"


def test_an_endpoint_error_speaks_the_forms_labels():
    err = EndpointError("timeout_s (25 s) must be shorter than interval_s (20 s)", "timeout_s")
    assert form_message(err) == "Timeout (25 s) must be shorter than Probe interval (20 s)"
    # the field's label leads when the message does not start with it
    assert form_message(EndpointError("use http:// or https://", "base_url")) == "Base URL: Use http:// or https://"
    # whole words only: 'max_tokens' is one label, not 'Max tokens' around a replaced 'tokens'
    assert form_message(EndpointError("max_tokens is required", "max_tokens")) == "Max tokens is required"
    assert form_message(EndpointError("an endpoint named 'x' already exists")) == "An endpoint named 'x' already exists"


def test_validation_errors_read_in_the_forms_words():
    with pytest.raises(EndpointError) as info:
        validate({"name": "x", "base_url": "http://127.0.0.1:9/v1", "model": "m", "max_tokens": "many"})
    assert form_message(info.value).startswith("Max tokens must be a")
