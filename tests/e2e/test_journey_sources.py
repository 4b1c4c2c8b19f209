"""Journey in a real browser: a newcomer connects each of the three live sources from the Sources page — the LiteLLM
proxy's PostgreSQL, OpenTelemetry spans through the worker's receiver, Prometheus scraping an engine — and reads
production TTFT per hour on each card; then hands the engine's queue p95 to the worksheet, where it stays after a
reload. Real components throughout: PostgreSQL with LiteLLM's own schema, the opentelemetry-sdk exporter, Debian's
Prometheus scraping the built-in simulator, the worker as `ttft-planner worker --otlp-port`.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.sync_api import Page, expect

from planner.simulator import SimulatorConfig, running_simulator
from planner.simulator.app import build_app
from planner.store import open_store
from planner.store.source_hours import production_hours
from planner.store.sources import get_source
from tests.e2e.conftest import ROOT, StreamlitServer, free_port, new_context, wait_for_app
from tests.planner.sources import test_sources_litellm as library_tests
from tests.planner.sources.test_sources_litellm import _insert, _requests
from tests.planner.sources.test_sources_otlp import _emit
from tests.support.prometheus import running_prometheus
from tests.support.stopping import stop_process
from tests.support.store_template import seed_data_dir
from tests.support.waiting import wait_for

litellm_template = library_tests.litellm_template
proxy_db = library_tests.proxy_db

pytestmark = pytest.mark.postgres

DSN_VAR = "LITELLM_E2E_DSN"
TOKEN_VAR = "OTLP_E2E_TOKEN"
TOKEN = "e2e-otlp-token"
N_ENGINE = 30  # requests the engine serves: ≥ 20 in one hour, so its queue p95 can be handed over


@pytest.fixture(scope="module")
def engine_scraped():
    """Prometheus' URL once it has scraped every one of N_ENGINE requests sent at once to a simulated engine."""
    app = build_app(SimulatorConfig(prefill_tokens_per_s=2_000, slots=2, max_output_tokens=1, speedup=4, seed=11))
    with running_simulator(app=app) as base, running_prometheus([urlsplit(base).netloc]) as prom:

        def ask(i: int) -> int:
            body = {"model": "sim-model", "max_tokens": 1, "messages": [{"role": "user", "content": f"w{i} " * 400}]}
            return httpx.post(f"{base}/chat/completions", json=body, timeout=60).status_code

        with ThreadPoolExecutor(N_ENGINE) as pool:
            assert set(pool.map(ask, range(N_ENGINE))) == {200}

        def scraped() -> bool:
            q = {"query": "sum(vllm:request_queue_time_seconds_count)"}
            got = httpx.get(f"{prom}/api/v1/query", params=q).json()["data"]["result"]
            return bool(got) and float(got[0]["value"][1]) == N_ENGINE

        wait_for(scraped, timeout_s=120, what="Prometheus holding every request")
        yield prom


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _add(page: Page, kind: str, name: str, fields: dict[str, str]) -> None:
    wait_for_app(page)
    expander = page.get_by_test_id("stExpander").filter(has_text="Add a source")
    details = expander.get_by_test_id("stExpanderDetails")  # inert while folded
    if details.get_attribute("inert") is not None:  # folded once a source exists: open it as a user would
        expander.get_by_text("Add a source", exact=True).click()
    expect(details).not_to_have_attribute("inert", "")
    details.get_by_text(kind, exact=True).click()
    wait_for_app(page)
    form = page.get_by_test_id("stForm")  # the Prometheus section below has fields of the same names
    form.get_by_label("Name", exact=True).fill(name)
    for label, value in fields.items():
        form.get_by_label(label, exact=True).fill(value)
    form.get_by_role("button", name="Add source").click()
    wait_for_app(page)
    expect(page.get_by_text(f"Added {name}")).to_be_visible()


@dataclass
class SourcesPage:
    """The Sources page in the browser, with the store it shows (to find a source's card by its id)."""

    page: Page
    store_url: str

    def card(self, name: str):
        """The bordered container of source `name` (keyed by its id: .st-key-sources_card_<id>)."""
        store = open_store(self.store_url)
        try:
            source_id = get_source(store, name).id
        finally:
            store.dispose()
        return self.page.locator(f".st-key-sources_card_{source_id}")

    def press(self, name: str, button: str) -> None:
        self.card(name).get_by_role("button", name=button).click()
        wait_for_app(self.page)

    def hours(self, name: str) -> list[list[str]]:
        """The rows of the card's production-TTFT-per-hour table, as the browser shows them."""
        table = self.card(name).locator("[data-testid='stTable'] table")
        expect(table).to_be_visible()
        rows = table.locator("tbody tr")
        return [[c.strip() for c in rows.nth(i).locator("td").all_inner_texts()] for i in range(rows.count())]


def test_a_newcomer_connects_three_sources_and_reads_production_ttft_per_hour(
    proxy_db, engine_scraped, tmp_path, browser
):
    _insert(proxy_db, _requests(120))
    data = seed_data_dir(tmp_path / "data")
    env = {DSN_VAR: proxy_db, TOKEN_VAR: TOKEN}
    server = StreamlitServer(data, env=env)
    otlp_port = free_port()
    store_url = f"sqlite:///{data / 'planner.db'}"
    log = open(data / "worker.log", "w")  # noqa: SIM115 - closed by stop_process
    worker = subprocess.Popen(
        [str(Path(sys.executable).parent / "ttft-planner"), "worker", "--otlp-port", str(otlp_port)]
        + ["--source-sync-s", "0"]
        + ["--database-url", store_url],
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    context = new_context(browser, timezone_id="UTC", viewport={"width": 1400, "height": 1100})
    try:
        wait_for(lambda: worker.poll() is not None or _listening(otlp_port), 120, "the worker's OTLP receiver")
        assert worker.poll() is None, (data / "worker.log").read_text()[-2000:]
        page = context.new_page()
        sources = SourcesPage(page, store_url)
        page.goto(f"{server.url}/sources")
        wait_for_app(page)
        expect(page.get_by_text("No sources yet")).to_be_visible()

        # 1. the LiteLLM proxy: Add, Test, Sync now, and its hours
        _add(page, "LiteLLM proxy (PostgreSQL)", "prod", {"Environment variable holding its PostgreSQL URL": DSN_VAR})
        sources.press("prod", "Test")
        expect(sources.card("prod").get_by_text("holds 120 requests")).to_be_visible()
        sources.press("prod", "Sync now")
        # 120 requests a second apart from 09:00 UTC; TTFT of request i is 150 + i ms (nearest rank: 60th, 114th)
        assert sources.hours("prod") == [["2026-11-16 09:00 UTC", "120", "209 ms", "263 ms"]]

        # 2. OpenTelemetry: Add, the SDK's spans through the worker's receiver, and its hours after a reload
        _add(
            page,
            "OpenTelemetry spans (OTLP receiver)",
            "agents",
            {"Environment variable holding the bearer token its exporters send": TOKEN_VAR},
        )
        expect(sources.card("agents").get_by_text("No production requests stored yet")).to_be_visible()
        sent = _emit(f"http://127.0.0.1:{otlp_port}/v1/traces", TOKEN, 5)
        assert len(sent) >= 1 and all(r.name == "SUCCESS" for r in sent)
        page.reload()
        wait_for_app(page)
        # 5 spans from 09:00 UTC, TTFT 200 + i ms: p50 the 3rd (202), p95 the 5th (204)
        assert sources.hours("agents") == [["2026-11-16 09:00 UTC", "5", "202 ms", "204 ms"]]

        # 3. Prometheus: Add, Test, Sync now, and its hours as stored
        _add(
            page,
            "Prometheus (engine histograms)",
            "engines",
            {"Prometheus URL": engine_scraped, "Model (optional)": "sim-model"},
        )
        sources.press("engines", "Test")
        expect(sources.card("engines").get_by_text("for sim-model")).to_be_visible()
        sources.press("engines", "Sync now")
        expect(sources.card("engines").get_by_text("requests in the hours kept")).to_be_visible()  # the sync's answer
        store = open_store(store_url)
        hours = production_hours(store, get_source(store, "engines").id)
        store.dispose()
        assert sum(h.requests for h in hours) == N_ENGINE
        rows = sources.hours("engines")
        assert [(r[1], r[3]) for r in rows] == [(f"{h.requests:,.0f}", f"{h.p95_ms:,.0f} ms") for h in hours]
        page.screenshot(path=str(ROOT / "test-artifacts" / "sources-three.png"), full_page=True)

        # the engine's queue p95 to the worksheet, with where it came from; a reload keeps it
        sources.press("engines", "Use queue p95 in the worksheet")
        expect(page.get_by_role("heading", name="Worksheet", level=1)).to_be_visible()
        provenance = page.locator("[data-testid='stCaptionContainer']").filter(has_text="production queue-time p95")
        expect(provenance).to_contain_text("from Prometheus")
        page.reload()
        wait_for_app(page)
        expect(provenance).to_contain_text("model sim-model")
    finally:
        context.close()
        stop_process(worker, log)
        server.stop()
