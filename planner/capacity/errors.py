"""The one exception type of the capacity package."""

from __future__ import annotations

from planner.errors import PlannerError

__all__ = ["CapacityError"]


class CapacityError(PlannerError, ValueError):
    """An input the capacity/cost models cannot use; the message names the input and the fix."""
