"""The alert rules a team keeps, their series' states, history and deliveries: what the Alerts page and
`ttft-planner alerts` read and change.

The public surface the fronts use; the tables and SQL are planner.store.alerts'. A rule is built and checked by
planner.alerts.rules.build_rule first. add_rule raises DuplicateRule for a name already taken; every function passes
the store's errors through.
"""

from __future__ import annotations

from planner.store.alerts import (
    DuplicateRule,
    add_rule,
    alert_history,
    deliveries,
    load_rules,
    remove_rule,
    rule_by_name,
    series_frame,
    series_states,
)

__all__ = [
    "DuplicateRule",
    "add_rule",
    "alert_history",
    "deliveries",
    "load_rules",
    "remove_rule",
    "rule_by_name",
    "series_frame",
    "series_states",
]
