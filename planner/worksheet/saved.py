"""Saved worksheets: save, open, list, duplicate and delete them by name (the Worksheet page and `ttft-planner
worksheets`).

The public surface the fronts use; the table and SQL are planner.store.worksheets'. save_worksheet and
duplicate_worksheet raise NameTaken for a name in use, the others WorksheetNotFound for an unknown one; the store's
errors pass through.
"""

from __future__ import annotations

from planner.store.worksheets import (
    NameTaken,
    WorksheetNotFound,
    delete_worksheet,
    duplicate_worksheet,
    list_worksheets,
    load_worksheet,
    save_worksheet,
)

__all__ = [
    "NameTaken",
    "WorksheetNotFound",
    "delete_worksheet",
    "duplicate_worksheet",
    "list_worksheets",
    "load_worksheet",
    "save_worksheet",
]
