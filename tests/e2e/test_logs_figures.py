"""Real browser: what a new user reads on the Logs page for a 57-minute trace with no cache column, read at night for
the working day (issue 43) — the grid's cells as the browser draws them, and the uploader's limit."""

from __future__ import annotations

import math
import tomllib

from playwright.sync_api import Locator, Page, expect

from tests.e2e.conftest import ROOT, wait_for_app
from tests.e2e.test_logs_upload import _upload
from tests.support.short_trace import BUSIEST_HOUR_REQUESTS, N_REQUESTS, SPAN_MIN, short_trace_csv


def _grid(page: Page, header: str) -> Locator:
    """The dataframe whose header row holds `header` (its accessible table, the text the grid draws)."""
    return page.locator("[data-testid='stDataFrame']").filter(
        has=page.locator("th[role='columnheader']", has_text=header)
    )


def _cell(grid: Locator, col: int, row: int) -> Locator:
    return grid.locator(f"td[data-testid='glide-cell-{col}-{row}']")


def test_a_short_night_trace_reads_truthfully_and_the_uploader_states_the_configured_limit(
    page: Page, app_url, artifacts_dir, tmp_path
):
    log = tmp_path / "short-trace.csv"
    log.write_bytes(short_trace_csv())
    page.set_viewport_size({"width": 1400, "height": 1600})
    page.goto(f"{app_url}/logs")
    wait_for_app(page)
    _upload(page, log)
    expect(page.get_by_text(f"Read {N_REQUESTS} requests (short-trace.csv → azure)")).to_be_visible()
    wait_for_app(page)

    # The percentile table: the working day holds no request — "—" in its value cells, and the row says why.
    table = _grid(page, "percentile")
    expect(table).to_be_visible()
    for row in range(5, 10):  # rows 0–4: the whole log's p50…max; 5–9: the working day's
        expect(_cell(table, 0, row)).to_have_text("prompt tokens, working day (no request in the working day)")
        expect(_cell(table, 2, row)).to_have_text("—")
    expect(_cell(table, 2, 0)).to_have_text(f"{int(_whole_log_p50()):,}")

    # The headline: the busiest clock hour's requests, and that the log is shorter than an hour.
    busiest = page.locator("[data-testid='stMetric']").filter(has_text="Busiest clock hour")
    expect(busiest.locator("[data-testid='stMetricValue']")).to_have_text(f"{BUSIEST_HOUR_REQUESTS} requests")
    expect(page.get_by_text(f"the log spans {SPAN_MIN} min, less than an hour")).to_be_visible()
    expect(page.get_by_text("Peak-hour arrival rate")).to_have_count(0)
    cached = page.locator("[data-testid='stMetric']").filter(has_text="Cached share of prompt tokens")
    expect(cached.locator("[data-testid='stMetricValue']")).to_have_text("—")

    # Per model: the same unknown cache share, "—", not "0.0%".
    page.get_by_role("tab", name="Per model").click()
    models = _grid(page, "Cached share of prompt tokens")
    expect(models).to_be_visible()
    expect(_cell(models, 0, 0)).to_have_text("(unnamed)")
    expect(_cell(models, 5, 0)).to_have_text("—")
    page.screenshot(path=str(artifacts_dir / "logs-short-trace.png"), full_page=True)

    # A fresh visit: the uploader states the limit the config sets, as the Logs page's manual does.
    limit_mb = tomllib.loads((ROOT / "app" / ".streamlit" / "config.toml").read_text())["server"]["maxUploadSize"]
    fresh = page.context.new_page()
    fresh.goto(f"{app_url}/logs")
    wait_for_app(fresh)
    instructions = fresh.locator("[data-testid='stFileUploaderDropzoneInstructions']").first
    expect(instructions).to_contain_text(f"{limit_mb}MB per file")
    assert f"an upload at {limit_mb} MB" in (ROOT / "docs" / "pages" / "logs.md").read_text()
    fresh.close()


def _whole_log_p50() -> float:
    """The whole log's nearest-rank p50 prompt tokens, counted here from the trace's rows."""
    rows = short_trace_csv().decode().splitlines()[1:]
    tokens = sorted(int(r.split(",")[1]) for r in rows)
    return tokens[math.ceil(0.5 * len(tokens)) - 1]
