"""Journey in a real browser: a lead replays the team's traffic against a calibrated candidate and takes its
predicted queueing to the worksheet.

The candidate carries the speed spread a calibration measured (speed_sd, request_sd): the page quotes its p95 with
an interval, and the figure handed to the worksheet keeps that interval in its provenance where the lead reads it —
after the hand-off, after a reload, and in a fresh browser opening the shared address.
"""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.e2e.conftest import new_context, pick, wait_for_app

CANDIDATE = (
    "dedicated:name=calibrated,replicas=1,slots=2,prefill=3000,decode=60,usd_per_gpu_h=2,rtt=40,"
    "speed_sd=0.15,request_sd=0.05"
)
INTERVAL = re.compile(r"p95 [\d,]+ ms \(80%: [\d,]+–[\d,]+ ms\)")


def queue_caption(page: Page):
    return page.locator("[data-testid='stCaptionContainer']").filter(has_text="what-if replay of calibrated")


def test_a_calibrated_candidates_interval_reaches_the_worksheet_and_survives_a_shared_link(
    page: Page, app_url, browser
):
    page.set_viewport_size({"width": 1400, "height": 1100})
    page.goto(f"{app_url}/whatif")
    wait_for_app(page)
    pick(page, "…or a stored upload / sample", "sample: Azure LLM inference trace 2023 (real rows, CC-BY 4.0)")
    specs = page.get_by_role("textbox", name="Candidates (one per line)")
    specs.fill(CANDIDATE)
    specs.press("Control+Enter")  # a text area applies on Ctrl+Enter (or leaving it)
    wait_for_app(page)

    sentence = page.locator("[data-testid='stCaptionContainer']").filter(has_text=re.compile(r"^calibrated: p95"))
    expect(sentence).to_contain_text(re.compile(r"calibrated: p95 [\d,]+ ms \(80% interval [\d,]+ ms – [\d,]+ ms\)"))
    shown = re.search(r"p95 ([\d,]+) ms \(80% interval ([\d,]+) ms – ([\d,]+) ms\)", sentence.inner_text())
    assert shown is not None
    p95, lo, hi = (float(g.replace(",", "")) for g in shown.groups())
    assert lo < p95 < hi  # a real interval around the point prediction

    page.get_by_role("button", name="Use calibrated's predicted queueing in the worksheet").click()
    wait_for_app(page)
    expect(page.get_by_role("heading", name="Worksheet", level=1)).to_be_visible()
    expect(queue_caption(page)).to_contain_text(INTERVAL)
    assert f"(80%: {lo:,.0f}–{hi:,.0f} ms)" in queue_caption(page).inner_text()  # the page's numbers, not others

    page.wait_for_function("() => location.search.includes('queue_ms_from=')")
    shared = page.url
    page.reload()
    wait_for_app(page)
    expect(queue_caption(page)).to_contain_text(f"(80%: {lo:,.0f}–{hi:,.0f} ms)")

    other = new_context(browser)
    try:
        fresh = other.new_page()
        fresh.goto(shared)
        wait_for_app(fresh)
        expect(queue_caption(fresh)).to_contain_text(f"(80%: {lo:,.0f}–{hi:,.0f} ms)")
    finally:
        other.close()
