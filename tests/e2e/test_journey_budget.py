"""Journey 1 in a real browser: an engineering lead fills a budget.

Sets targets (a custom interaction type included), takes a measured figure from the Capacity & cost page with
"Use in worksheet", reloads, opens the shared address in a fresh browser context (figures and provenance still
there), saves two worksheets, opens one (the name field follows), and reads verdict sentences whose numbers the
test computes itself from the inputs it typed and the figure the page handed over.
"""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.e2e.conftest import new_context, open_expander, pick, wait_for_app


def spin(page: Page, label: str):
    return page.get_by_role("spinbutton", name=label, exact=True)


def type_number(page: Page, label: str, value: float, url_param: str | None = None) -> None:
    """Type `value` into the number box and press Enter. With `url_param`, wait until the address carries the value:
    the run that took it has written the worksheet's inputs to the URL, so the next input cannot race that run."""
    box = spin(page, label)
    box.fill(f"{value:g}")
    box.press("Enter")
    if url_param is not None:
        page.wait_for_function(
            "([k, v]) => new URLSearchParams(window.location.search).get(k) === v", arg=[url_param, f"{value:g}"]
        )
    wait_for_app(page)


def number_value(page: Page, label: str) -> float:
    return float(spin(page, label).input_value().replace(",", ""))


def expect_number(page: Page, label: str, value: float) -> None:
    """The input shows `value` (as the page formats it, no decimals); waits out the first paint after a reload."""
    expect(spin(page, label)).to_have_value(f"{value:.0f}")


def cold_caption(page: Page):
    return page.locator("[data-testid='stCaptionContainer']").filter(has_text="constant-rate estimate")


def test_an_engineering_lead_fills_a_budget(page: Page, app_url, browser, artifacts_dir):
    page.set_viewport_size({"width": 1400, "height": 1100})
    page.goto(app_url)
    wait_for_app(page)

    # 1. targets: chat at 800 ms instead of the preset, and a custom interaction type, which becomes the one in force
    type_number(page, "p95 TTFT target (ms)", 800, "target_ms")
    open_expander(page, "Add an interaction type")  # idle first, then opened and checked open: a rerun cannot eat it
    name = page.get_by_role("textbox", name="Name", exact=True)
    name.fill("Review bot")
    type_number(page, "p95 target (ms)", 3000)
    expect(name).to_have_value("Review bot")  # what the form sends, before it is sent
    expect(spin(page, "p95 target (ms)")).to_have_value(re.compile(r"^3,?000(\.0+)?$"))
    page.get_by_role("button", name="Add interaction type").click()
    wait_for_app(page)
    expect(page.get_by_role("combobox", name="Interaction type")).to_have_value("Review bot")
    expect(page.get_by_text("Added “Review bot”")).to_be_visible()
    expect_number(page, "p95 TTFT target (ms)", 3000)

    # 2. a modelled cold start from Capacity & cost → Weight loading, handed over with one click
    page.get_by_role("link", name="Capacity & cost", exact=True).click()
    wait_for_app(page)
    page.get_by_role("tab", name="Weight loading").click()
    page.get_by_role("button", name="Use this cold start in the worksheet").click()
    wait_for_app(page)
    expect(cold_caption(page)).to_have_count(1)
    expect(cold_caption(page)).to_contain_text("model · 70B fp8")
    cold_ms = number_value(page, "Weight loading (cold start) (ms)")
    assert cold_ms > 3000
    # the address bar follows the run's last message: wait for it, do not read it the moment the page is drawn
    page.wait_for_function(
        "() => location.search.includes('cold_ms_from=') && location.search.includes('custom=Review+bot%3A3000')"
    )

    # the negative budget, by hand: 3000 − 60 − cold − 80, with a true minus sign on the bar (item 10)
    over_ms = 3000 - 60 - cold_ms - 80
    expect(page.get_by_text(f"Over budget by {-over_ms:,.0f} ms before prefill even starts")).to_be_visible()
    expect(page.get_by_text(f"Weight loading (cold start) ({cold_ms:,.0f} ms) ate the budget")).to_be_visible()
    chart = page.locator("[data-testid='stPlotlyChart']").first
    expect(chart.locator("text.bartext", has_text=f"−{-over_ms:,.0f} ms")).to_have_count(1)

    # 3. a reload keeps the inputs and the provenance
    shared = page.url
    page.reload()
    wait_for_app(page)
    expect(cold_caption(page)).to_contain_text("model · 70B fp8")
    expect_number(page, "Weight loading (cold start) (ms)", cold_ms)
    expect_number(page, "p95 TTFT target (ms)", 3000)
    expect(page.get_by_role("combobox", name="Interaction type")).to_have_value("Review bot")

    # 4. the shared address in a fresh browser context (nothing in common but the URL)
    other = new_context(browser, viewport={"width": 1400, "height": 1100})
    try:
        p2 = other.new_page()
        p2.goto(shared)
        wait_for_app(p2)
        expect(cold_caption(p2)).to_contain_text("model · 70B fp8")
        expect_number(p2, "Weight loading (cold start) (ms)", cold_ms)
        expect_number(p2, "p95 TTFT target (ms)", 3000)
        expect(p2.get_by_text(f"Over budget by {-over_ms:,.0f} ms")).to_be_visible()
        # the chat target typed in step 1 travelled too, though Review bot is in force
        assert "targets=chat%3A800" in shared
        pick(p2, "Interaction type", "Chat panel / single-file edit")
        expect_number(p2, "p95 TTFT target (ms)", 800)
    finally:
        other.close()

    # 5. save it; then a second worksheet for chat where the prompt does not fit
    page.get_by_role("textbox", name="Worksheet name").fill("Plan A")
    page.get_by_role("button", name="Save worksheet").click()
    wait_for_app(page)
    expect(page.get_by_text("Saved “Plan A”.")).to_be_visible()

    pick(page, "Interaction type", "Chat panel / single-file edit")
    expect_number(page, "p95 TTFT target (ms)", 800)  # the target typed in step 1 was kept
    type_number(page, "Weight loading (cold start) (ms)", 0, "cold_ms")
    type_number(page, "p95 prompt (tokens)", 20000, "prompt_p95")
    page.get_by_role("textbox", name="Worksheet name").fill("Plan B")
    page.get_by_role("button", name="Save worksheet").click()
    wait_for_app(page)
    expect(page.get_by_text("Saved “Plan B”.")).to_be_visible()

    # the verdict quotes the uncached part (item 9), computed here: budget 800 − 60 − 0 − 80 = 660 ms
    budget_ms = 800 - 60 - 0 - 80
    rate, hit, prompt = 12000, 0.5, 20000
    uncached = prompt * (1 - hit)
    needed_ms = uncached / rate * 1000
    max_uncached = budget_ms / 1000 * rate
    plan_b = (
        f"{budget_ms:,} ms remain for prefill, but the p95 prompt's {uncached:,.0f} "
        f"uncached tokens need {needed_ms:,.0f} ms. "
        f"Shrink the uncached part of the p95 prompt to {max_uncached:,.0f} tokens "
        f"(a {max_uncached / (1 - hit):,.0f}-token p95 prompt at a 50% cache-hit rate)"
    )
    expect(page.get_by_text(plan_b)).to_be_visible()

    # 6. open Plan A: its inputs, its provenance and its name come back
    pick(page, "Saved worksheets", "Plan A")
    page.get_by_role("button", name="Open worksheet").click()
    wait_for_app(page)
    expect(page.get_by_text("Opened “Plan A”.")).to_be_visible()
    expect(page.get_by_role("textbox", name="Worksheet name")).to_have_value("Plan A")
    expect_number(page, "p95 TTFT target (ms)", 3000)
    expect(cold_caption(page)).to_contain_text("model · 70B fp8")
    expect(page.get_by_text(f"Over budget by {-over_ms:,.0f} ms")).to_be_visible()
    page.wait_for_function("() => location.search.includes('cold_ms_from=')")
    page.screenshot(path=str(artifacts_dir / "journey-budget.png"), full_page=True)
