"""SLO alert rules and their state machine: pure data and one pure function, no I/O.

A rule watches one endpoint (or every endpoint) from every vantage it is probed from; each
(rule, endpoint, vantage) is a *series* with its own state. A production p95 rule watches the team's own requests
to the endpoint, read by a live source, instead: its one series per endpoint has the vantage PRODUCTION_VANTAGE.

    ok ──breach──▶ pending ──breach held for `for_s`──▶ firing ──clear──▶ ok
     ▲               │                                  (one "firing" notification,
     └──no breach────┘                                   one "resolved" notification)

Hysteresis, so one slow sample does not page anyone and a value hovering at the threshold does
not flap:
- a breach needs at least `min_n` samples in the window (an error-rate rule counts attempts, a production p95
  rule the production requests);
  below it the window says nothing and the state holds (pending falls back to ok);
- a firing series resolves only when the value is back below the threshold by `clear_margin`
  (default 10 %: a 500 ms p95 rule that fired resolves at 450 ms or less, with `min_n` samples);
- pending must hold for `for_s` seconds of evaluations before it fires.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

# The vocabulary lives below the store and this module (planner.store.alerts reads and writes it); re-exported here.
from planner.alerts.vocab import PRODUCTION_VANTAGE, UNITS, AlertKind, AlertState, Rule, SeriesStatus, Transition
from planner.inputs.email_address import parse_address_list
from planner.inputs.env_names import check_env_name
from planner.inputs.validate import (
    ALERT_CLEAR_MARGIN_PCT,
    ALERT_FOR_MIN,
    ALERT_MIN_N,
    ALERT_THRESHOLD,
    ALERT_WINDOW_MIN,
)

__all__ = [
    "PRODUCTION_VANTAGE",
    "UNITS",
    "AlertKind",
    "AlertState",
    "Observation",
    "P95_KINDS",
    "Rule",
    "SeriesStatus",
    "Transition",
    "build_rule",
    "judged",
    "step",
]

# The unit a threshold is typed in (an error rate as a percentage), for messages.
_THRESHOLD_UNIT = {
    AlertKind.P95_OVER: "ms",
    AlertKind.ERROR_RATE_OVER: "%",
    AlertKind.COLD_OVER: "s",
    AlertKind.PRODUCTION_P95_OVER: "ms",
}
#: The kinds whose threshold is a p95 TTFT target (an interaction type's or a saved worksheet's may set it).
P95_KINDS = (AlertKind.P95_OVER, AlertKind.PRODUCTION_P95_OVER)
#: The longest name and recipient list the store keeps (planner.store.alerts.AlertRuleRow's columns), characters.
_NAME_MAX_CHARS = 120
_EMAIL_TO_MAX_CHARS = 500


@dataclass(frozen=True)
class Observation:
    """What one evaluation saw over the window: the value (None when there is nothing to judge) and its n."""

    value: float | None
    n: int


def _judgeable(rule: Rule, obs: Observation) -> bool:
    if obs.value is None:
        return False
    return rule.kind in (AlertKind.NO_SUCCESS, AlertKind.COLD_OVER) or obs.n >= rule.min_n


def step(rule: Rule, prev: SeriesStatus, obs: Observation, now_ms: int) -> tuple[SeriesStatus, Transition | None]:
    """The series' next status after seeing `obs` at `now_ms`, and the transition to notify (if any)."""
    judgeable = _judgeable(rule, obs)
    breach = judgeable and obs.value is not None and obs.value > rule.threshold
    clear = judgeable and obs.value is not None and obs.value <= rule.clear_below
    seen = replace(prev, value=obs.value, n=obs.n)
    if prev.state is AlertState.FIRING:
        if clear:
            return SeriesStatus(AlertState.OK, now_ms, obs.value, obs.n), Transition.RESOLVED
        return seen, None
    if not breach:
        return SeriesStatus(
            AlertState.OK, prev.since_ms if prev.state is AlertState.OK else now_ms, obs.value, obs.n
        ), None
    since = prev.since_ms if prev.state is AlertState.PENDING and prev.since_ms is not None else now_ms
    if now_ms - since >= rule.for_s * 1000:
        return SeriesStatus(AlertState.FIRING, now_ms, obs.value, obs.n), Transition.FIRING
    return SeriesStatus(AlertState.PENDING, since, obs.value, obs.n), None


def judged(rule: Rule) -> Rule:
    """The rule as its series are judged: a no-success rule fires when the gap exceeds its window, so its threshold
    is the window, in minutes."""
    if rule.kind is AlertKind.NO_SUCCESS:
        return replace(rule, threshold=rule.window_s / 60)
    return rule


def _one_line(value: str, field: str, max_chars: int) -> str:
    """`value` stripped, when it is one line of printable text of at most `max_chars`; else ValueError naming `field`
    (what was typed is shown escaped: a line break reads as \\n)."""
    value = value.strip()
    shown = repr(value if len(value) <= 60 else value[:59] + "…")
    if not value.isprintable():
        raise ValueError(f"{field} {shown}: one line of text, without line breaks, tabs or other control characters")
    if len(value) > max_chars:
        raise ValueError(f"{field}: {len(value)} characters; at most {max_chars} are kept")
    return value


def build_rule(
    name: str,
    kind: AlertKind | str,
    *,
    threshold: float | None,
    window_min: float,
    for_min: float,
    min_n: int,
    clear_margin_pct: float = 10.0,
    endpoint_id: int | None = None,
    interaction: str = "",
    targets_ms: dict[str, float] | None = None,
    webhook_env: str = "",
    webhook_format: str = "json",
    email_to: str = "",
) -> Rule:
    """A Rule from what a user typed (CLI or page), thresholds in the user's units (ms, %, s); raises ValueError
    with a one-line reason naming the field (planner.inputs.validate.OutOfRange for a number outside its rule: the
    window in minutes ALERT_WINDOW_MIN, for ALERT_FOR_MIN, min n ALERT_MIN_N, the clear margin ALERT_CLEAR_MARGIN_PCT,
    the threshold ALERT_THRESHOLD — the ranges `alerts add` and the Alerts page take). `targets_ms` maps interaction
    type → p95 target for --interaction; with an interaction type the threshold is its target (a different one typed
    as well is refused).

    The name is one line of text; `email_to` comma-separated e-mail addresses (stored as "a@x.com, b@y.com");
    `webhook_env` the NAME of an environment variable (anything else typed there is never echoed: it may be the URL
    with its token)."""
    kind = AlertKind(kind)
    # the ranges of `alerts add`'s options and the Alerts page's inputs (planner.inputs.validate): OutOfRange is a
    # ValueError
    window_min = ALERT_WINDOW_MIN.check(window_min, "window")
    for_min = ALERT_FOR_MIN.check(for_min, "for")
    min_n = int(ALERT_MIN_N.check(min_n, "min n"))
    clear_margin_pct = ALERT_CLEAR_MARGIN_PCT.check(clear_margin_pct, "clear margin (%)")
    name = _one_line(name, "name", _NAME_MAX_CHARS)
    if not name:
        raise ValueError("the rule needs a name")
    emails = ", ".join(parse_address_list(_one_line(email_to, "e-mail", _EMAIL_TO_MAX_CHARS), what="e-mail"))
    webhook_env = check_env_name(webhook_env, "webhook variable", optional=True)
    if interaction:
        targets_ms = targets_ms or {}
        if kind not in P95_KINDS:
            raise ValueError(
                "an interaction type or worksheet sets a p95 TTFT target: use it with a p95 TTFT or production p95 "
                "TTFT rule"
            )
        if interaction not in targets_ms:
            raise ValueError(f"unknown p95 target {interaction!r}; known: {', '.join(targets_ms)}")
        target_ms = targets_ms[interaction]
        if threshold is not None and threshold != target_ms:
            # A rule is labelled with the target it took its threshold from: a different threshold would be mislabelled.
            raise ValueError(
                f"threshold {threshold:g} ms is not the {interaction} target ({target_ms:g} ms): leave the threshold "
                "empty to use the target, or choose no target to use your own"
            )
        threshold = target_ms
    if kind is AlertKind.NO_SUCCESS:
        threshold = window_min
    if threshold is None or not threshold > 0:
        raise ValueError(
            f"threshold: give a number > 0 ({_THRESHOLD_UNIT.get(kind, 'min')})"
            + (" or take an interaction type's target" if kind in P95_KINDS else "")
        )
    threshold = ALERT_THRESHOLD.check(threshold, "threshold")
    if kind is AlertKind.ERROR_RATE_OVER:
        if threshold >= 100:
            raise ValueError(f"threshold {threshold:g} %: an error rate is below 100 %")
        threshold /= 100.0
    return Rule(
        name=name,
        kind=kind,
        threshold=float(threshold),
        window_s=window_min * 60,
        for_s=for_min * 60,
        min_n=int(min_n),
        clear_margin=clear_margin_pct / 100,
        endpoint_id=endpoint_id,
        interaction=interaction,
        webhook_env=webhook_env,
        webhook_format=webhook_format,
        email_to=emails,
    )
