"""Real browser, no internet: the Regions world map draws its land and countries from the topojson the app
serves itself (app/static/topojson/), and nothing is fetched from anywhere but the app's own server."""

from __future__ import annotations

import time
from urllib.parse import urlparse

from playwright.sync_api import Browser

from planner.store import open_store
from planner.store.rtt import SampleRecord, insert_rtt_samples
from tests.e2e.conftest import new_context, wait_for_app


def test_world_map_draws_with_no_network(browser: Browser, app_server, app_url, artifacts_dir):
    eng = open_store(f"sqlite:///{app_server.data_dir / 'planner.db'}")
    now = int(time.time() * 1000)
    insert_rtt_samples(
        eng, [SampleRecord("aws-eu-west-1", "x", "server", "tcp-connect", 20.0 + i, now, vantage="") for i in range(10)]
    )
    eng.dispose()
    context = new_context(browser, viewport={"width": 1400, "height": 1100})
    own = urlparse(app_url).netloc
    outside: list[str] = []
    topojson: list[str] = []

    def route(r):
        url = r.request.url
        if urlparse(url).netloc != own:  # the internet: refused, and recorded
            outside.append(url)
            return r.abort()
        if "topojson" in url:
            topojson.append(url)
        return r.continue_()

    context.route("**/*", route)
    page = context.new_page()
    page.goto(f"{app_url}/regions")
    wait_for_app(page)
    geo = page.locator("[data-testid='stPlotlyChart'] .geolayer").first
    geo.wait_for()
    land = page.locator("[data-testid='stPlotlyChart'] .geolayer .layer.land path").first
    land.wait_for(state="attached")
    d = land.get_attribute("d") or ""
    assert len(d) > 1000, "the land layer has no shapes"  # continents, not an empty path
    countries = page.locator("[data-testid='stPlotlyChart'] .geolayer .layer.countries path").first
    assert len(countries.get_attribute("d") or "") > 1000
    page.screenshot(path=str(artifacts_dir / "regions-map-offline.png"), full_page=True)
    context.close()
    assert topojson and all(urlparse(u).netloc == own and u.endswith("/world_110m.json") for u in topojson)
    assert not [u for u in outside if "plot.ly" in u or "topojson" in u], outside
