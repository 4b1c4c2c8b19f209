"""Real browser: every page of the router opens by its deep link and renders without an exception."""

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import ROOT, wait_for_app


def _pages():
    import ast

    tree = ast.parse((ROOT / "app" / "streamlit_app.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "PAGES":
            return [ast.literal_eval(elt) for elt in node.value.elts]
    raise AssertionError("PAGES not found in the router")


@pytest.mark.parametrize(
    "file, title, icon, url_path", _pages(), ids=lambda v: v if isinstance(v, str) and v.isidentifier() else None
)
def test_page_opens_by_deep_link(page: Page, app_url, artifacts_dir, file, title, icon, url_path):
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{app_url}/{url_path}")
    wait_for_app(page)
    expect(page.locator("[data-testid='stSidebarNav']").get_by_text(title, exact=True)).to_be_visible()
    wait_for_app(page)
    expect(page.locator("[data-testid='stSkeleton']")).to_have_count(0)
    assert page.locator("[data-testid='stException']").count() == 0, f"{title} shows an exception"
    expect(page.locator("h1").first).to_be_visible()
    page.screenshot(path=str(artifacts_dir / f"page-{url_path}.png"), full_page=True)
