"""The manual's screenshots: every page of the sidebar in real Chromium at 1,400 px, over a store with a few days of
use in it (tests/support/demo_store.py), saved as assets/screenshots/<url path>.png for the README's tour and the
docs site's page by page.

Runs only when TTFT_SCREENSHOTS=1 is set (CI does not rewrite committed files):

    TTFT_SCREENSHOTS=1 .venv/bin/python -m pytest -p no:cacheprovider -n 0 tests/e2e/test_screenshots.py

Each page is opened by its deep link, brought to a state with figures (an endpoint with three days of probes, a
stored log, a replay, two endpoints compared), and waited on until the script is idle and every chart has drawn; a
page that shows an exception or a skeleton fails the test rather than leave a broken picture. tests/test_docs.py
checks that a picture exists for every page and that the README and the page's doc show it.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa
from playwright.sync_api import Page, expect

from planner.simulator import SimulatorConfig, running_simulator
from planner.store import open_store
from tests.e2e.conftest import ROOT, StreamlitServer, pick, wait_for_app
from tests.e2e.test_page_layout import CHARTS_DRAWN, _add_to_compare
from tests.support.demo_store import seed_demo
from tests.support.router import router_pages
from tests.support.store_template import seed_data_dir
from tests.support.worker_proc import spawn_worker, stop_worker, wait_logged

pytestmark = pytest.mark.skipif(
    os.environ.get("TTFT_SCREENSHOTS") != "1", reason="writes assets/screenshots/: set TTFT_SCREENSHOTS=1"
)

SHOTS = ROOT / "assets" / "screenshots"
WIDTH, HEIGHT = 1400, 1500  # tall enough for each page's first charts


#: what each demo endpoint's simulator adds before the first token (ms): near DEMO_ENDPOINTS' off-peak medians
OVERHEAD_MS = {"acme-eu": 280.0, "simulated": 390.0, "beta-us": 520.0}
KEYS = {"ACME_API_KEY": "demo", "BETA_API_KEY": "demo", "OTLP_TOKEN": "demo-token"}


def _probed_since(db_url: str, t0_ms: int) -> int:
    """How many endpoints the worker has probed since t0_ms."""
    eng = open_store(db_url)
    try:
        with eng.connect() as conn:
            return int(
                conn.execute(
                    sa.text("SELECT count(DISTINCT endpoint_id) FROM probe_sample WHERE started_at_ms > :t AND ok"),
                    {"t": t0_ms},
                ).scalar_one()
            )
    finally:
        eng.dispose()


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory):
    """The demo store, its three endpoints served by local simulators that a real worker keeps probing (so the pages
    show a live worker, not "No worker is probing"), and the dashboard over it."""
    data = seed_data_dir(tmp_path_factory.mktemp("e2e-screenshots"))
    db_url = f"sqlite:///{data / 'planner.db'}"
    with contextlib.ExitStack() as stack:
        urls = {
            name: stack.enter_context(running_simulator(SimulatorConfig(base_overhead_ms=ms, slots=8, seed=i)))
            for i, (name, ms) in enumerate(OVERHEAD_MS.items())
        }
        eng = open_store(db_url)
        t0_ms = int(time.time() * 1000)
        seed_demo(eng, t0_ms, base_urls=urls)
        eng.dispose()
        log = data / "worker.log"
        worker = spawn_worker(log, env={"TTFT_PLANNER_DATA_DIR": str(data), "TTFT_PLANNER_DATABASE_URL": None, **KEYS})
        stack.callback(stop_worker, worker)
        wait_logged(lambda: _probed_since(db_url, t0_ms) == len(urls), "a probe of every endpoint", log)
        server = StreamlitServer(data, env=KEYS)
        stack.callback(server.stop)
        yield server


def _probes(page: Page) -> None:
    pick(page, "Endpoint @ vantage", re.compile(r"^acme-eu @ "))
    expect(page.get_by_text("Your users' p95").first).to_be_visible()


def _metric(label: str) -> Callable[[Page], None]:
    def wait(page: Page) -> None:
        expect(page.locator("[data-testid='stMetricLabel']").filter(has_text=label).first).to_be_visible()

    return wait


def _whatif(page: Page) -> None:
    pick(page, "…or a stored upload / production source / sample", re.compile(r"^stored: requests\.csv "))
    expect(page.get_by_text(re.compile(r"^(Cheapest candidate meeting|No candidate meets) the ")).first).to_be_visible()


#: url path → (the query the page opens with, how to bring it to a state with figures once open)
STATES: dict[str, tuple[str, Callable[[Page], None] | None]] = {
    "probes": ("", _probes),
    "logs": ("?log=upload-1", _metric("p95 prompt tokens")),
    "compare": ("", _add_to_compare),
    "whatif": ("", _whatif),
}


def _shoot(page: Page, url: str, path: Path, get_there: Callable[[Page], None] | None) -> None:
    page.goto(url)
    wait_for_app(page)
    if get_there is not None:
        get_there(page)
    wait_for_app(page)
    page.wait_for_function(CHARTS_DRAWN, polling=200)
    expect(page.locator("[data-testid='stSkeleton']")).to_have_count(0)
    assert page.locator("[data-testid='stException']").count() == 0, f"{url} shows an exception"
    page.mouse.move(0, HEIGHT - 1)  # no hover label over a chart
    page.screenshot(path=str(path))


def test_a_screenshot_of_every_page(page: Page, demo_server):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    for _file, _title, _icon, url_path in router_pages():
        query, get_there = STATES.get(url_path, ("", None))
        _shoot(page, f"{demo_server.url}/{url_path}{query}", SHOTS / f"{url_path}.png", get_there)
    assert sorted(p.stem for p in SHOTS.glob("*.png")) >= sorted(u for *_, u in router_pages())
