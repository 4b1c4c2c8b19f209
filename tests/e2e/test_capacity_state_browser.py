"""Real browser: typed inputs on Capacity & cost survive leaving the page, and the address reproduces them."""

import re

from playwright.sync_api import Page, expect

from tests.e2e.conftest import new_context, pick, wait_for_app


def test_typed_inputs_survive_navigation_and_travel_in_the_url(page: Page, app_url, browser):
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{app_url}/capacity")
    wait_for_app(page)
    gpus = page.get_by_role("spinbutton", name="GPUs per replica (node size)")
    gpus.fill("4")
    gpus.press("Enter")
    wait_for_app(page)
    page.wait_for_function("() => window.location.search.includes('cap_gpr=4')")
    link = page.url

    page.get_by_role("link", name="Worksheet").click()
    wait_for_app(page)
    expect(page.get_by_role("heading", name="TTFT worksheet")).to_be_visible()
    page.get_by_role("link", name="Capacity & cost", exact=True).click()
    wait_for_app(page)
    expect(page.get_by_role("spinbutton", name="GPUs per replica (node size)")).to_have_value("4")

    other = new_context(browser)
    try:
        p2 = other.new_page()
        p2.goto(link)
        wait_for_app(p2)
        expect(p2.get_by_role("spinbutton", name="GPUs per replica (node size)")).to_have_value("4")
    finally:
        other.close()


def test_a_changed_input_kept_in_the_address_does_not_break_the_hand_off(page: Page, app_url):
    # Inputs bound to the address bar (here the GPU of the Prefill tab) once made the hand-off's page switch raise
    # "Cannot clear query parameters - the following are bound to widgets".
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{app_url}/capacity")
    wait_for_app(page)
    page.get_by_role("tab", name="Prefill").click()
    pick(page, "GPU", re.compile(r"^H200"))
    page.wait_for_function("() => window.location.search.includes('cap_pf_gpu=')")
    modelled = page.get_by_text(re.compile(r"uncached tokens → [\d,]+ tokens/s"))
    expect(modelled).to_be_visible()
    tokens_per_s = re.search(r"→ ([\d,]+) tokens/s", modelled.inner_text()).group(1).replace(",", "")
    page.get_by_role("button", name="Use this prefill rate in the worksheet").click()
    wait_for_app(page)
    expect(page.get_by_role("heading", name="TTFT worksheet")).to_be_visible()
    expect(page.locator("[data-testid='stException']")).to_have_count(0)
    expect(page.get_by_role("spinbutton", name=re.compile("prefill", re.IGNORECASE)).first).to_have_value(tokens_per_s)
    page.wait_for_function("() => window.location.search.includes('prefill')")
    assert "cap_pf_gpu" not in page.url  # the Worksheet's address holds the worksheet, not Capacity's inputs
