"""Real browser: add an endpoint from the provider catalog on the Endpoints page (picker → form → table).

The shared server's environment has a Groq key and an empty Mistral one (tests/e2e/conftest.py SHARED_ENV); its store
has endpoints already, so the "Add an endpoint" section starts closed.
"""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.e2e.conftest import SHARED_ENV, open_expander, pick, wait_for_app


def _fill_the_form(page: Page, provider: str) -> None:
    """Click "Fill the form" and wait for the run it starts to be drawn: its message names the provider (waiting for
    the script to be idle alone can read the page before that run begins, and a submit clicked then, under load, once
    sent the form without the model the fill had put in)."""
    page.get_by_role("button", name="Fill the form").click()
    expect(page.get_by_text(f"Filled the form from the catalog: {provider}")).to_be_visible()
    wait_for_app(page)


def test_pick_bedrock_in_a_region_fill_the_form_and_add_it(app_url, page: Page, artifacts_dir):
    page.set_viewport_size({"width": 1400, "height": 1100})
    page.goto(app_url + "/endpoints")
    open_expander(page, "Add an endpoint")
    pick(page, "From the provider catalog", "Groq")
    expect(page.get_by_text("GROQ_API_KEY: present")).to_be_visible()
    pick(page, "From the provider catalog", "Mistral AI")
    expect(page.get_by_text("MISTRAL_API_KEY: missing")).to_be_visible()
    pick(page, "From the provider catalog", "AWS Bedrock")
    pick(page, "Region", "eu-central-1")
    _fill_the_form(page, "AWS Bedrock")
    expect(page.get_by_role("textbox", name="Base URL", exact=True)).to_have_value(
        "https://bedrock-runtime.eu-central-1.amazonaws.com"
    )
    expect(page.get_by_role("textbox", name="Region", exact=True)).to_have_value("eu-central-1")
    expect(page.get_by_role("textbox", name="Model", exact=True)).to_have_value(
        "anthropic.claude-3-5-haiku-20241022-v1:0"
    )
    page.get_by_role("button", name="Add endpoint").click()
    wait_for_app(page)
    expect(page.get_by_text("Added bedrock-anthropic.claude-3-5-haiku-20241022-v1-0-eu-central-1")).to_be_visible()
    table = page.locator("[data-testid='stDataFrame']").first
    expect(table).to_be_visible()
    assert SHARED_ENV["GROQ_API_KEY"] not in page.content()
    page.screenshot(path=str(artifacts_dir / "endpoints-catalog.png"), full_page=True)


def test_the_add_section_stays_open_after_fill_and_after_a_refused_add(app_url, page: Page):
    # The store has endpoints, so the section starts closed: the user opened it, and it must stay open with the
    # filled form in view, and the refusal next to the form.
    page.set_viewport_size({"width": 1400, "height": 1100})
    page.goto(app_url + "/endpoints")
    open_expander(page, "Add an endpoint")
    pick(page, "From the provider catalog", "Groq")
    _fill_the_form(page, "Groq")
    base_url = page.get_by_role("textbox", name="Base URL", exact=True)
    expect(base_url).to_be_visible()
    expect(base_url).not_to_have_value("")
    timeout = page.get_by_role("spinbutton", name="Timeout (s)", exact=True)
    interval = page.get_by_role("spinbutton", name="Probe interval (s)", exact=True)
    interval.fill("10")
    timeout.fill("25")  # longer than the interval: refused
    timeout.press("Tab")
    page.get_by_role("button", name="Add endpoint").click()
    wait_for_app(page)
    expect(page.get_by_text("Timeout (25 s) must be shorter", exact=False)).to_be_visible()
    expect(base_url).to_be_visible()
    expect(timeout).to_have_value(re.compile(r"^25(\.0+)?$"))  # the typed value is kept
