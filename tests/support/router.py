"""The dashboard's pages as its router lists them, for the tests that walk every page (AppTest and browser)."""

from __future__ import annotations

import ast
from pathlib import Path

__all__ = ["ROUTER", "router_pages"]

ROUTER = Path(__file__).resolve().parents[2] / "app" / "streamlit_app.py"


def router_pages() -> list[tuple[str, str, str, str]]:
    """The router's PAGES, (file, title, icon, url_path) in the sidebar's order, read from its source: importing the
    router would run Streamlit calls outside a session."""
    for node in ast.walk(ast.parse(ROUTER.read_text())):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "PAGES":
            return [ast.literal_eval(elt) for elt in node.value.elts]
    raise AssertionError("PAGES not found in the router")
