"""The alert state machine on constructed series: it fires only after the for-duration with enough samples,
holds between the clear level and the threshold (hysteresis), and notifies exactly once each way; a rule reads in
plain words, with the threshold it really has and the target it came from."""

from __future__ import annotations

import pytest

from planner.alerts.rules import AlertKind, AlertState, Observation, Rule, SeriesStatus, Transition, build_rule, step
from planner.alerts.words import KIND_CHOICES, KIND_WHAT, audit_detail, condition
from planner.team.roles import ACTION_WORDS, ACTIONS

MIN = 60_000
RULE = Rule(name="chat p95", kind=AlertKind.P95_OVER, threshold=500.0, window_s=900, for_s=120, min_n=20)


def run(rule: Rule, series: list[tuple[float | None, int]]) -> tuple[list[AlertState], list[tuple[int, Transition]]]:
    """Evaluate one observation a minute; the states seen and the (minute, transition) notifications."""
    status, states, sent = SeriesStatus(), [], []
    for minute, (value, n) in enumerate(series):
        status, transition = step(rule, status, Observation(value, n), minute * MIN)
        states.append(status.state)
        if transition is not None:
            sent.append((minute, transition))
    return states, sent


def test_fires_after_the_for_duration_and_resolves_only_below_the_clear_level():
    series = [(300, 40), (600, 40), (600, 40), (600, 40), (600, 40), (480, 40), (460, 40), (440, 40), (300, 40)]
    states, sent = run(RULE, series)
    assert states[:4] == [AlertState.OK, AlertState.PENDING, AlertState.PENDING, AlertState.FIRING]
    # 480 and 460 ms are under the 500 ms threshold but above the 450 ms clear level: still firing (no flapping)
    assert states[5:7] == [AlertState.FIRING, AlertState.FIRING]
    assert sent == [(3, Transition.FIRING), (7, Transition.RESOLVED)]


def test_never_fires_on_fewer_samples_than_the_minimum():
    states, sent = run(RULE, [(5000, 19)] * 30)
    assert set(states) == {AlertState.OK} and sent == []


def test_a_short_spike_is_pending_then_ok_without_a_notification():
    states, sent = run(RULE, [(600, 40), (700, 40), (400, 40), (600, 40)])
    assert states == [AlertState.PENDING, AlertState.PENDING, AlertState.OK, AlertState.PENDING]
    assert sent == []


def test_a_firing_series_that_goes_silent_keeps_firing():
    states, sent = run(RULE, [(900, 40)] * 3 + [(None, 0)] * 5 + [(100, 5)])
    assert states[-1] is AlertState.FIRING  # no data, then too few samples: nothing to resolve on
    assert sent == [(2, Transition.FIRING)]


def test_for_zero_fires_on_the_first_breach_and_error_rate_counts_attempts():
    rule = Rule(name="errors", kind=AlertKind.ERROR_RATE_OVER, threshold=0.05, for_s=0, min_n=10)
    states, sent = run(rule, [(0.5, 9), (0.06, 10), (0.05, 10), (0.04, 10)])
    assert states == [AlertState.OK, AlertState.FIRING, AlertState.FIRING, AlertState.OK]
    assert sent == [(1, Transition.FIRING), (3, Transition.RESOLVED)]


def test_no_success_and_cold_rules_need_no_minimum_n():
    rule = Rule(name="silent", kind=AlertKind.NO_SUCCESS, threshold=10.0, for_s=0, min_n=20)
    _, sent = run(rule, [(4.0, 1), (11.0, 1), (0.5, 1)])
    assert sent == [(1, Transition.FIRING), (2, Transition.RESOLVED)]


TARGETS = {"inline": 200.0, "chat": 500.0, "worksheet: Team plan": 350.0}


def _p95(name: str, **kw) -> Rule:
    return build_rule(name, "p95_over", window_min=15, for_min=5, min_n=20, targets_ms=TARGETS, **kw)


def test_a_rule_on_a_target_is_labelled_with_the_threshold_it_has_and_that_target():
    assert condition(_p95("chat p95", threshold=None, interaction="chat")) == (
        "p95 TTFT over 500 ms (Chat panel / single-file edit target)"
    )
    assert condition(_p95("plan", threshold=None, interaction="worksheet: Team plan")) == (
        "p95 TTFT over 350 ms (worksheet “Team plan” target)"
    )
    assert condition(_p95("typed", threshold=200.0)) == "p95 TTFT over 200 ms"
    assert _p95("same", threshold=500.0, interaction="chat").threshold == 500.0  # the target typed out: agreed


def test_a_threshold_that_is_not_the_chosen_targets_is_refused():
    with pytest.raises(ValueError, match=r"threshold 200 ms is not the chat target \(500 ms\)"):
        _p95("chat p95", threshold=200.0, interaction="chat")


def test_every_kind_and_alert_audit_action_reads_in_plain_words():
    rules = [
        Rule(name="p", kind=AlertKind.P95_OVER, threshold=500.0),
        Rule(name="e", kind=AlertKind.ERROR_RATE_OVER, threshold=0.05),
        Rule(name="s", kind=AlertKind.NO_SUCCESS, threshold=15.0, window_s=900),
        Rule(name="c", kind=AlertKind.COLD_OVER, threshold=12.0),
    ]
    assert [condition(r) for r in rules] == [
        "p95 TTFT over 500 ms",
        "error rate over 5.0%",
        "no successful sample for 15 min",
        "cold-start TTFT over 12.0 s",
    ]
    assert set(KIND_WHAT) == set(KIND_CHOICES) == set(AlertKind)
    for phrase in [*KIND_WHAT.values(), *KIND_CHOICES.values(), *ACTION_WORDS.values()]:
        assert "_" not in phrase and "." not in phrase, phrase  # no code like p95_over or alert.write
    assert set(ACTION_WORDS) == set(ACTIONS)  # every action has its words
    assert audit_detail("added", rules[0]) == "added: p95 TTFT over 500 ms"
