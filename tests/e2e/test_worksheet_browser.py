"""Real browser: open the dashboard, change the target, watch the waterfall update; screenshot it."""

from playwright.sync_api import Page, expect

from tests.e2e.conftest import wait_for_app


def test_changing_the_target_updates_the_waterfall(page: Page, app_url, artifacts_dir):
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(app_url)
    wait_for_app(page)
    chart = page.locator("[data-testid='stPlotlyChart']").first
    chart.locator(".main-svg").first.wait_for()
    expect(chart.locator("text.bartext", has_text="360 ms")).to_have_count(1)

    target = page.get_by_role("spinbutton", name="p95 TTFT target (ms)")
    target.fill("800")
    target.press("Enter")
    wait_for_app(page)
    # the budget bar now reads 800 − 60 − 0 − 80 = 660 ms, and the URL carries the input for sharing
    expect(chart.locator("text.bartext", has_text="660 ms")).to_have_count(1)
    expect(page.get_by_text("660 ms remain for prefill")).to_be_visible()
    page.wait_for_function("() => location.search.includes('target_ms=800')")  # the address follows the run
    page.screenshot(path=str(artifacts_dir / "worksheet.png"), full_page=True)

    network = page.get_by_role("spinbutton", name="Network / first-token delivery (ms)")
    network.fill("900")
    network.press("Enter")
    wait_for_app(page)
    expect(page.get_by_text("no model choice can fix this")).to_be_visible()
    page.screenshot(path=str(artifacts_dir / "worksheet-negative.png"), full_page=True)


def test_a_shared_link_opens_with_the_same_inputs(page: Page, app_url):
    page.goto(f"{app_url}/?interaction=Inline+completion&target_ms=250&queue_ms=35")
    wait_for_app(page)
    expect(page.get_by_text("135 ms remain for prefill")).to_be_visible()


def test_the_worksheet_by_its_name_opens_the_same_link_at_home(page: Page, app_url):
    # `/worksheet` is what the nav calls the home page: it opens "/" with the query, not "Page not found"
    page.goto(f"{app_url}/worksheet?interaction=Inline+completion&target_ms=250&queue_ms=35")
    page.wait_for_function("() => location.pathname === '/' && location.search.includes('queue_ms=35')")
    wait_for_app(page)
    expect(page.get_by_text("135 ms remain for prefill")).to_be_visible()
    expect(page.get_by_text("Page not found")).to_have_count(0)
