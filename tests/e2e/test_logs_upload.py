"""Real browser: upload a gzip-compressed log on the Logs page, read the p95, hand it to the worksheet."""

from __future__ import annotations

import gzip
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.e2e.conftest import UI_WAIT_MS, wait_for_app

SAMPLES = Path(__file__).resolve().parents[2] / "assets" / "sample_logs"


def _upload(page: Page, path: Path) -> None:
    """Give `path` to the page's uploader and wait for its chip (the upload is taken)."""
    chip = page.get_by_role("button", name=f"Remove {path.name}")
    wait_for_app(page)
    for attempt in range(3):  # a rerun right after the first load (the browser's time zone arriving) can redraw the
        # uploader and drop the file: give it again; the last try waits as long as any browser wait
        page.locator("[data-testid='stFileUploaderDropzoneInput']").first.set_input_files(str(path))
        try:
            expect(chip).to_be_visible(timeout=10_000 if attempt < 2 else UI_WAIT_MS)
            return
        except AssertionError:
            wait_for_app(page)
    raise AssertionError(f"the uploader never took {path.name}")


def test_upload_summarise_and_use_in_worksheet(page: Page, app_url, artifacts_dir, tmp_path):
    log = tmp_path / "agent-requests.jsonl.gz"
    log.write_bytes(gzip.compress((SAMPLES / "anthropic_messages.jsonl").read_bytes() + b"{oops\n"))
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{app_url}/logs")
    wait_for_app(page)
    _upload(page, log)
    expect(page.get_by_text("Read 400 requests (agent-requests.jsonl.gz → anthropic)")).to_be_visible()
    expect(page.get_by_text("1 line rejected")).to_be_visible()
    wait_for_app(page)
    metric = page.locator("[data-testid='stMetric']").first
    expect(metric).to_contain_text("p95 prompt tokens (working day)")
    p95_text = metric.locator("[data-testid='stMetricValue']").inner_text().strip()
    assert p95_text.replace(",", "").isdigit()
    page.locator("[data-testid='stPlotlyChart'] .main-svg").first.wait_for()
    page.screenshot(path=str(artifacts_dir / "logs.png"), full_page=True)

    page.get_by_role("button", name="Use in worksheet").click()
    wait_for_app(page)
    p95_input = page.get_by_role("spinbutton", name="p95 prompt (tokens)")
    expect(p95_input).to_have_value(p95_text.replace(",", ""))
    expect(page.get_by_text("agent-requests.jsonl.gz").first).to_be_visible()


def test_a_csv_export_with_quoted_json_survives_leaving_the_page(page: Page, app_url, artifacts_dir):
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{app_url}/logs")
    expect(page.get_by_text("Upload a log, load a sample, or open a stored upload to start.")).to_be_visible()
    wait_for_app(page)
    _upload(page, SAMPLES / "litellm_spend_logs.csv")
    expect(page.get_by_text("Read 120 requests (litellm_spend_logs.csv → litellm)")).to_be_visible()
    wait_for_app(page)
    nav = page.locator("[data-testid='stSidebarNav']")
    nav.get_by_text("Worksheet", exact=True).click()
    expect(page.get_by_role("heading", name="Worksheet", level=1)).to_be_visible()
    wait_for_app(page)
    nav.get_by_text("Logs", exact=True).click()
    expect(page.get_by_role("heading", name="Logs", level=1)).to_be_visible()
    wait_for_app(page)
    # Same session, no new upload: the page still shows the file it read.
    expect(page.get_by_text("Read 120 requests (litellm_spend_logs.csv → litellm)")).to_be_visible()
    expect(page.get_by_text("Showing your last upload: litellm_spend_logs.csv")).to_be_visible()
    page.screenshot(path=str(artifacts_dir / "logs-after-return.png"), full_page=True)
