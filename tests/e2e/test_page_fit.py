"""Real browser at 1,400 px (issue 44): every table on Endpoints, GPU fit, Compare and Load sweep shows its last
column whole (no grid scrolls sideways, no static table overflows its column), GPU-fit bar labels keep their size
however long, and no Regions legend lies over its chart's title.

One server over a store with data on those pages: two endpoints with a day of probes and a cold reading, RTT samples
from the server and a browser (both methods), a stored sweep.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from planner.store import open_store
from planner.store.sweeps import store_sweep
from tests.app.test_sweep_page import _one_slot_sweep
from tests.e2e.conftest import StreamlitServer, pick, wait_for_app
from tests.e2e.test_truncated_text import CHARTS_DRAWN, _add_to_compare, _seed_manual_alerts_regions
from tests.support.store_states import STATES, seed_state
from tests.support.store_template import seed_data_dir

WIDTH = 1400

# Each shown table: a grid that scrolls sideways (its last column cut at the edge), or a static table wider than the
# block it sits in. Returns [{what, content, box}] for those that do not fit.
TABLES_THAT_DO_NOT_FIT = """
() => {
  const out = [];
  const shown = (e) => e.getClientRects().length && e.getBoundingClientRect().width > 0;
  for (const grid of document.querySelectorAll("[data-testid='stDataFrame']")) {
    const s = grid.querySelector(".dvn-scroller");
    if (shown(grid) && s && s.scrollWidth > s.clientWidth + 1)
      out.push({what: "grid", content: s.scrollWidth, box: s.clientWidth});
  }
  for (const t of document.querySelectorAll("[data-testid='stTable']")) {
    const table = t.querySelector("table");
    if (shown(t) && table && table.getBoundingClientRect().width > t.getBoundingClientRect().width + 1)
      out.push({what: "table: " + table.innerText.slice(0, 40), content: table.getBoundingClientRect().width,
                box: t.getBoundingClientRect().width});
  }
  return out;
}
"""

# The drawn height (px) of each bar label: Plotly shrinks a label that does not fit by scaling it (an SVG transform),
# its font size unchanged, so the box it is drawn in is what a reader sees.
BAR_LABEL_PX = """
() => [...document.querySelectorAll("[data-testid='stPlotlyChart'] .bartext")]
  .filter(t => t.getClientRects().length).map(t => t.getBoundingClientRect().height)
"""

# [{title, legend}] rectangles of every shown chart that has both.
TITLES_AND_LEGENDS = """
() => [...document.querySelectorAll("[data-testid='stPlotlyChart']")].filter(c => c.getClientRects().length).map(c => {
  const r = (e) => {
    if (!e) return null;
    const b = e.getBoundingClientRect();
    return [b.left, b.top, b.right, b.bottom];
  };
  return {title: r(c.querySelector(".gtitle")), legend: r(c.querySelector(".legend")),
          text: (c.querySelector(".gtitle") || {}).textContent};
}).filter(x => x.title && x.legend)
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    data = seed_data_dir(tmp_path_factory.mktemp("e2e-fit"))
    eng = open_store(f"sqlite:///{data / 'planner.db'}")
    for state in STATES[2:]:  # two endpoints with a day of samples and a cold reading, an uploaded log, a worksheet
        seed_state(eng, state)
    _seed_manual_alerts_regions(eng)  # RTT samples from both sides (and a manual endpoint, an alert)
    store_sweep(eng, _one_slot_sweep(), vantage="ci", tool_version="test")
    eng.dispose()
    srv = StreamlitServer(data)
    yield srv
    srv.stop()


def _open(page: Page, url: str) -> None:
    page.set_viewport_size({"width": WIDTH, "height": 1000})
    page.goto(url)
    wait_for_app(page)


def _gpu_fit_tab(page: Page) -> None:
    page.get_by_role("tab", name="GPU fit").click()
    pick(page, "Model", "Llama 3.1 70B")  # long labels: "needs 3, runs on 4 (tensor parallel)", "no single node"
    page.wait_for_function(CHARTS_DRAWN, polling=200)


@pytest.mark.parametrize(
    "path", ["endpoints", "sweep", "compare", "capacity", "logs?log=upload-1", "regions", "alerts"]
)
def test_every_table_shows_its_last_column_whole(page: Page, server, path):
    _open(page, f"{server.url}/{path}")
    if path == "compare":
        _add_to_compare(page)
    if path == "capacity":
        _gpu_fit_tab(page)
    wait_for_app(page)
    expect(page.locator("[data-testid='stDataFrame']:visible, [data-testid='stTable']:visible").first).to_be_visible()
    assert page.evaluate(TABLES_THAT_DO_NOT_FIT) == []


def test_gpu_fit_bar_labels_keep_their_size(page: Page, server):
    _open(page, f"{server.url}/capacity")
    _gpu_fit_tab(page)
    expect(page.get_by_text("no single node").first).to_be_visible()
    sizes = page.evaluate(BAR_LABEL_PX)
    assert len(sizes) == 7 and min(sizes) >= 12, sizes  # one per GPU preset, none shrunk to fit its bar (12 px text)


def test_regions_legends_clear_their_titles(page: Page, server):
    _open(page, f"{server.url}/regions")
    for title in ("RTT distribution per region", "Server vs browser"):  # drawn (the page fills in as it runs)
        expect(page.locator("[data-testid='stPlotlyChart'] .gtitle", has_text=title)).to_be_visible()
    page.wait_for_function(CHARTS_DRAWN, polling=200)
    charts = page.evaluate(TITLES_AND_LEGENDS)
    assert {c["text"] for c in charts} >= {"RTT distribution per region", "Server vs browser"}
    for c in charts:
        (tl, tt, tr, tb), (ll, lt, lr, lb) = c["title"], c["legend"]
        overlap = min(tr, lr) > max(tl, ll) and min(tb, lb) > max(tt, lt)
        assert not overlap, c


# Each chip of a multiselect (a [data-tag] in its tags container), its box and the box of the field it sits in: a chip
# is seen when it lies inside the field (a chip scrolled out of a one-row field lies past its right edge).
CHIPS_OUT_OF_SIGHT = """
(label) => {
  const field = [...document.querySelectorAll("[data-testid='stMultiSelect']")]
    .find(w => w.querySelector("label") && w.querySelector("label").innerText.includes(label));
  if (!field) return ["no multiselect labelled " + label];
  const tags = field.querySelector("[data-testid='stMultiSelectTagsContainer']");
  const box = tags.getBoundingClientRect();
  return [...tags.querySelectorAll("[data-tag]")].filter(c => {
    const b = c.getBoundingClientRect();
    return b.width === 0 || b.right > box.right + 1 || b.left < box.left - 1 || b.bottom > box.bottom + 1;
  }).map(c => c.innerText);
}
"""


def test_the_prefix_tab_shows_every_routing_policy_chosen(page: Page, server):
    _open(page, f"{server.url}/capacity")
    page.get_by_role("tab", name="Prefix cache").click()
    field = page.locator("[data-testid='stMultiSelect']", has_text="Routing policies")
    expect(field.locator("[data-testid='stMultiSelectTagsContainer'] [data-tag]")).to_have_count(4)
    assert page.evaluate(CHIPS_OUT_OF_SIGHT, "Routing policies") == []
