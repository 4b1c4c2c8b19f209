"""Real browser: the report opens offline and its charts draw; the Compare page's download gives that file."""

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from planner.compare import compare, report_html
from planner.store import open_store
from tests.e2e.conftest import StreamlitServer, new_context, wait_for_app
from tests.support.compare_seed import seed_three

NAMES = ["fast-a", "slow-b", "twin-c"]


@pytest.fixture(scope="module")
def seeded_server(tmp_path_factory):
    """A Streamlit server whose data dir already holds three probed endpoints."""
    data = tmp_path_factory.mktemp("compare-e2e")
    eng = open_store(f"sqlite:///{data / 'planner.db'}")
    seed_three(eng, n=960)
    eng.dispose()
    server = StreamlitServer(data)
    yield server
    server.stop()


def _open_offline(browser: Browser, path: Path, shot: Path) -> list[str]:
    """Open `path` with the network off; return every non-file URL the page tried to load."""
    context = new_context(browser, offline=True, viewport={"width": 1300, "height": 900})
    tried: list[str] = []

    def block(route):
        tried.append(route.request.url)
        route.abort()

    context.route("http*://**", block)
    page = context.new_page()
    page.goto(path.as_uri())
    page.locator("#chart-0 .main-svg").first.wait_for()
    for i in range(3):
        expect(page.locator(f"#chart-{i} .main-svg").first).to_be_attached()
    # the hour-of-day chart drew one line per endpoint (every hour of the day has n ≥ 20 in the seed)
    for name in NAMES:
        expect(page.locator("#chart-0 .legendtext").filter(has_text=name).first).to_be_attached()
    expect(page.locator("#chart-0 g.trace.scatter")).to_have_count(3)
    expect(page.locator("#decision")).to_contain_text("fast-a")
    page.screenshot(path=str(shot), full_page=True)
    context.close()
    return tried


def test_report_file_opens_with_no_network_and_its_charts_draw(
    browser: Browser, seeded_server, tmp_path, artifacts_dir
):
    eng = open_store(f"sqlite:///{seeded_server.data_dir / 'planner.db'}")
    try:
        path = tmp_path / "report.html"
        path.write_text(report_html(compare(eng, NAMES)), encoding="utf-8")
    finally:
        eng.dispose()
    assert _open_offline(browser, path, artifacts_dir / "compare-report-offline.png") == []


class _Decision(HTMLParser):
    def __init__(self):
        super().__init__()
        self.endpoints, self._in, self._col = [], False, 0

    def handle_starttag(self, tag, attrs):
        if tag == "table" and dict(attrs).get("id") == "decision":
            self._in = True
        elif self._in and tag == "tr":
            self._col = 0
        elif self._in and tag == "td":
            self._col += 1

    def handle_endtag(self, tag):
        if tag == "table":
            self._in = False

    def handle_data(self, data):
        if self._in and self._col == 2 and data.strip():
            self.endpoints.append(data.strip())


def test_download_button_gives_the_report(page: Page, browser: Browser, seeded_server, tmp_path, artifacts_dir):
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{seeded_server.url}/compare")
    wait_for_app(page)
    expect(
        page.get_by_text(
            re.compile("(cannot yet tell fast-a and twin-c apart|fast-a and twin-c are practically equivalent)")
        ).first
    ).to_be_visible()
    page.locator("[data-testid='stPlotlyChart'] .main-svg").first.wait_for()
    page.screenshot(path=str(artifacts_dir / "compare.png"), full_page=True)
    with page.expect_download() as info:
        page.get_by_role("button", name="Download HTML report").click()
    download = info.value
    assert download.suggested_filename == "ttft-comparison-fast-a-vs-slow-b-vs-twin-c.html"
    saved = tmp_path / download.suggested_filename
    download.save_as(saved)
    parser = _Decision()
    parser.feed(saved.read_text(encoding="utf-8"))
    assert parser.endpoints[-1] == "slow-b" and set(parser.endpoints) == set(NAMES)
    assert _open_offline(browser, saved, artifacts_dir / "compare-downloaded-offline.png") == []
