"""Real browser: typed inputs on Capacity & cost survive leaving the page, and the address reproduces them."""

from playwright.sync_api import Page, expect

from tests.e2e.conftest import new_context, wait_for_app


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
    page.get_by_role("link", name="Capacity & cost").click()
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
