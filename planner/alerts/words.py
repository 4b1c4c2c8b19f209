"""Alerts in plain words: what each kind of rule watches, whose p95 target a threshold came from, a rule's condition
in one phrase (the audit actions are in words in planner/team/roles.py, ACTION_WORDS).

The page, the notifications and the audit details take their wording from here, so a reader never sees a code
("p95_over", "alert.write"); the codes stay what the store, the CLI options and the JSON output use.
"""

from __future__ import annotations

from planner.alerts.rules import AlertKind, Rule
from planner.alerts.targets import WORKSHEET_PREFIX
from planner.settings import vantage_name
from planner.worksheet.interactions import interactions

__all__ = ["KIND_CHOICES", "KIND_WHAT", "audit_detail", "condition", "format_value", "series_where", "target_words"]

#: What a rule of each kind measures (the subject of its sentences: "p95 TTFT on chat-eu is over 500 ms").
KIND_WHAT: dict[AlertKind, str] = {
    AlertKind.P95_OVER: "p95 TTFT",
    AlertKind.ERROR_RATE_OVER: "error rate",
    AlertKind.NO_SUCCESS: "time since the last successful sample",
    AlertKind.COLD_OVER: "cold-start TTFT",
    AlertKind.PRODUCTION_P95_OVER: "production p95 TTFT",
}

#: Each kind as a choice in a form, with the unit its threshold is typed in.
KIND_CHOICES: dict[AlertKind, str] = {
    AlertKind.P95_OVER: "p95 TTFT over a target (ms)",
    AlertKind.ERROR_RATE_OVER: "error rate over (%)",
    AlertKind.NO_SUCCESS: "no successful sample for the window",
    AlertKind.COLD_OVER: "cold reading over (s)",
    AlertKind.PRODUCTION_P95_OVER: "production p95 TTFT over a target (ms): your users' requests, from a live source",
}


def format_value(kind: AlertKind, v: float | None) -> str:
    """A value or threshold of a rule of `kind` with its unit: "512 ms", "4.0%", "12.5 min", "3.2 s"; "no data" for
    None or NaN (a missing cell read back through pandas)."""
    if v is None or v != v:
        return "no data"
    if kind is AlertKind.ERROR_RATE_OVER:
        return f"{v:.1%}"
    if kind in (AlertKind.P95_OVER, AlertKind.PRODUCTION_P95_OVER):
        return f"{v:,.0f} ms"
    return f"{v:,.1f} {'min' if kind is AlertKind.NO_SUCCESS else 's'}"


def series_where(kind: AlertKind, endpoint: str, vantage: str) -> str:
    """Where a series looks: "chat-eu @ eu-west" for the probes from a vantage; the endpoint alone for a production
    rule (its kind already says whose requests: production requests are seen from no vantage)."""
    return endpoint if kind.production else f"{endpoint} @ {vantage_name(vantage)}"


def target_words(interaction: str) -> str:
    """Whose p95 target a threshold was taken from: "Chat panel / single-file edit" for the interaction key "chat",
    "worksheet “Team plan”" for "worksheet: Team plan"; an unknown key is shown as it is."""
    if interaction.startswith(WORKSHEET_PREFIX):
        return f"worksheet “{interaction[len(WORKSHEET_PREFIX) :]}”"
    return {i.key: i.label for i in interactions()}.get(interaction, interaction)


def condition(rule: Rule) -> str:
    """When the rule breaches, with the threshold it really has and where that came from:
    "p95 TTFT over 500 ms (Chat panel / single-file edit target)", "no successful sample for 15 min"."""
    if rule.kind is AlertKind.NO_SUCCESS:  # its threshold is its window (planner.alerts.evaluate)
        return f"no successful sample for {rule.window_s / 60:g} min"
    target = f" ({target_words(rule.interaction)} target)" if rule.interaction else ""
    return f"{KIND_WHAT[rule.kind]} over {format_value(rule.kind, rule.threshold)}{target}"


def audit_detail(verb: str, rule: Rule) -> str:
    """The audit log's detail for a change to `rule`: "added: p95 TTFT over 500 ms (… target)"."""
    return f"{verb}: {condition(rule)}"
