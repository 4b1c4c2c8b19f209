"""Issue 15 items 1–2: every numeric endpoint field and RTT interval is finite and in range, at every entry point
(CLI, TOML import, the registry API), refused with a message naming the field (CLI exit 2)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from planner.cli import cli
from planner.endpoints.registry import EndpointError, add_endpoint, import_toml, list_endpoints
from planner.store.rtt import add_target, list_targets, set_target_enabled

BASE = ["endpoints", "add", "e1", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]


@pytest.mark.parametrize(
    "option, value, field",
    [
        ("--prompt-tokens", "9223372036854775807", "prompt_tokens"),
        ("--max-tokens", "1e308", "max_tokens"),
        ("--interval-s", "inf", "interval_s"),
        ("--interval-s", "nan", "interval_s"),
        ("--interval-s", "1e12", "interval_s"),
        ("--timeout-s", "-inf", "timeout_s"),
        ("--scale-down-window-s", "1e300", "scale_down_window_s"),
    ],
)
def test_cli_refuses_out_of_range_and_non_finite_endpoint_numbers(sqlite_store_url, option, value, field):
    res = CliRunner().invoke(cli, [*BASE, option, value, "--database-url", sqlite_store_url])
    assert res.exit_code == 2, res.output
    assert (field in res.output or option in res.output) and "Traceback" not in res.output


def test_toml_import_rejects_the_record_and_keeps_the_rest(engine):
    doc = """
[[endpoint]]
name = "huge"
base_url = "http://127.0.0.1:9/v1"
model = "m"
prompt_tokens = 9223372036854775807

[[endpoint]]
name = "forever"
base_url = "http://127.0.0.1:9/v1"
model = "m"
interval_s = inf

[[endpoint]]
name = "fine"
base_url = "http://127.0.0.1:9/v1"
model = "m"
"""
    res = import_toml(engine, doc)
    assert res.added == ["fine"]
    assert [(n, "prompt_tokens" in why or "interval_s" in why) for _, n, why in res.rejected] == [
        ("huge", True),
        ("forever", True),
    ]
    assert [e.name for e in list_endpoints(engine)] == ["fine"]


def test_registry_api_refuses_a_prompt_that_would_be_built_in_memory(engine):
    with pytest.raises(EndpointError) as info:
        add_endpoint(engine, {"name": "x", "base_url": "http://h/v1", "model": "m", "prompt_tokens": 10**12})
    assert info.value.field == "prompt_tokens"


@pytest.mark.parametrize("value", ["inf", "nan", "1e9"])
def test_regions_add_refuses_a_non_finite_or_huge_interval(sqlite_store_url, value):
    res = CliRunner().invoke(
        cli, ["regions", "add", "r1", "http://127.0.0.1:9", "--interval-s", value, "--database-url", sqlite_store_url]
    )
    assert res.exit_code == 2, res.output
    assert "interval" in res.output.lower() and "Traceback" not in res.output


def test_rtt_store_refuses_infinite_intervals(engine):
    with pytest.raises(ValueError, match="finite"):
        add_target(engine, "r1", "http://127.0.0.1:9", interval_s=float("inf"), enabled=True)
    add_target(engine, "r2", "http://127.0.0.1:9", interval_s=60, enabled=True)
    with pytest.raises(ValueError, match="finite"):
        set_target_enabled(engine, "r2", True, interval_s=float("nan"))
    assert [t.interval_s for t in list_targets(engine)] == [60.0]


def test_endpoint_numbers_are_checked_by_the_shared_rules_with_the_same_words():
    """Issue 28: the endpoint registry's ranges are planner.inputs.validate's rules themselves (no second table that
    could drift from them): the top of each rule is accepted, just past it is refused with that rule's own sentence."""
    from planner.endpoints.registry import NUMERIC_RULES, validate
    from planner.inputs import validate as V

    assert NUMERIC_RULES == {
        "interval_s": V.PROBE_INTERVAL_S,
        "timeout_s": V.PROBE_TIMEOUT_S,
        "prompt_tokens": V.PROMPT_TOKENS,
        "max_tokens": V.PROBE_MAX_TOKENS,
        "scale_down_window_s": V.SCALE_DOWN_WINDOW_S,
    }
    base = {"name": "x", "base_url": "http://h/v1", "model": "m", "interval_s": V.PROBE_INTERVAL_S.hi}
    for field, rule in NUMERIC_RULES.items():
        top = int(rule.hi) if rule.integer else rule.hi
        if field != "interval_s":
            validate({**base, field: top})  # the top of the range is accepted
        past = top + 1
        with pytest.raises(EndpointError) as info:
            validate({**base, field: past})
        shown = str(past) if rule.integer else f"{past:g}"
        assert info.value.field == field and str(info.value) == f"{field} {rule.problem(past, shown)}"
