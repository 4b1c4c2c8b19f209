"""Who created, changed or deleted what: the audit log as the Admin page reads it (newest first; times UTC epoch ms).

The public surface pages use; the table and SQL are planner.store.audit's, which the fronts also write through. The
store's errors pass through.
"""

from __future__ import annotations

from planner.store.audit import audit_log

__all__ = ["audit_log"]
