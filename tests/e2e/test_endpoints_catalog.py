"""Real browser: add an endpoint from the provider catalog on the Endpoints page (picker → form → table)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import StreamlitServer, wait_for_app
from tests.e2e.test_journey_budget import pick


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = StreamlitServer(
        tmp_path_factory.mktemp("e2e-catalog"), env={"GROQ_API_KEY": "gsk_e2e_never_shown", "MISTRAL_API_KEY": ""}
    )
    yield srv
    srv.stop()


def test_pick_bedrock_in_a_region_fill_the_form_and_add_it(server, page: Page, artifacts_dir):
    page.set_viewport_size({"width": 1400, "height": 1100})
    page.goto(server.url + "/endpoints")
    wait_for_app(page)
    pick(page, "From the provider catalog", "Groq")
    expect(page.get_by_text("GROQ_API_KEY: present")).to_be_visible()
    pick(page, "From the provider catalog", "Mistral AI")
    expect(page.get_by_text("MISTRAL_API_KEY: missing")).to_be_visible()
    pick(page, "From the provider catalog", "AWS Bedrock")
    pick(page, "Region", "eu-central-1")
    page.get_by_role("button", name="Fill the form").click()
    wait_for_app(page)
    expect(page.get_by_role("textbox", name="Base URL", exact=True)).to_have_value(
        "https://bedrock-runtime.eu-central-1.amazonaws.com"
    )
    expect(page.get_by_role("textbox", name="Region", exact=True)).to_have_value("eu-central-1")
    page.get_by_role("button", name="Add endpoint").click()
    wait_for_app(page)
    expect(page.get_by_text("Added bedrock-anthropic.claude-3-5-haiku-20241022-v1-0-eu-central-1")).to_be_visible()
    table = page.locator("[data-testid='stDataFrame']").first
    expect(table).to_be_visible()
    assert "gsk_e2e_never_shown" not in page.content()
    page.screenshot(path=str(artifacts_dir / "endpoints-catalog.png"), full_page=True)
