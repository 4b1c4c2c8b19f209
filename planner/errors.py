"""PlannerError: the root of every exception the planner raises on purpose.

Each of the project's own errors derives from it, and also from the built-in it has always been (ValueError,
RuntimeError, KeyError), so an `except ValueError` written before it still catches the same errors. CatalogError is
the one error of both catalogs (regions and providers): a malformed catalog row or a spec a catalog cannot fill.
"""

from __future__ import annotations

__all__ = ["CatalogError", "PlannerError"]


class PlannerError(Exception):
    """An error of the planner's own making; the message names what and where (never a secret)."""


class CatalogError(PlannerError, ValueError):
    """A malformed catalog row (regions, providers, or a custom target), or a spec the catalog cannot fill; the
    message names the entry and field."""
