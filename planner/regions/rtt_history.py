"""The Regions page's stored RTT: custom targets (add, list, remove) and the samples measured to each region, from
the server (the worker) or a browser, with their summary.

The public surface pages use; the tables and SQL are planner.store.rtt's. RTT in ms, times UTC epoch ms. add_target
raises TargetExists, remove_target TargetNotFound; the store's errors pass through.
"""

from __future__ import annotations

from planner.store.rtt import (
    TargetExists,
    TargetNotFound,
    add_target,
    insert_rtt_samples,
    list_targets,
    load_samples,
    remove_target,
    rtt_summary,
)

__all__ = [
    "TargetExists",
    "TargetNotFound",
    "add_target",
    "insert_rtt_samples",
    "list_targets",
    "load_samples",
    "remove_target",
    "rtt_summary",
]
