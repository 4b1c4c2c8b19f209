"""Real browser at 1,400 px: on every page and tab no visible text is cut, every table shows its last column whole,
no chart legend lies over its title (issue 28's walk of every page; issue 44's tables, legends, bar labels, chips).

One server over a store with data on every page (the shared hostile endpoints, two endpoints with a day of probes
and a cold reading, a manual endpoint with its long "manual: … @ URL (protocol)" name, an alert rule that has fired
and whose delivery failed, RTT samples from the server and a browser (both methods) with a failed region of each, an
uploaded log, a saved worksheet, a stored load sweep), one browser page, every page of the sidebar in turn and every
tab on it. A page that opens on a selection without data is walked again in its data states (DATA_STATES: Probes on
an endpoint with a day of samples and on the manual one, Compare with a second endpoint with data, Logs and What-if
on the real Azure 2023 trace). On each the page is laid out in a window as tall as its content (nothing is below the
fold, so only a real cut counts), expanders are opened, charts drawn, and scripts look at what is shown:
- every visible text node: the text is cut when its element shows an ellipsis (text-overflow with scrollWidth >
  clientWidth), or when it reaches past an ancestor that hides or scrolls its overflow (a label cut at a column's
  edge, a tab label scrolled out of its strip, a chart title past its SVG's edge). A select box's chosen option and a
  filled field are an input's value, not a text node: cut when it is wider than its box;
- every table: a grid that scrolls sideways (its last column cut at the edge), or a static table wider than the
  block it sits in;
- every Plotly chart with a title and a legend: the two rectangles must not overlap.
Two states the walk does not reach are checked after it on the same server: GPU fit on a model whose bars carry long
labels (each label keeps its size, the table fits), and the Prefix cache tab's routing chips (each in sight).

Not checked, by design:
- a data editor (GPU fit's presets; its key ends in `_editor`): a spreadsheet to edit, it scrolls sideways by design.
- the text inside st.dataframe grids: Glide Data Grid draws cells and headers on a canvas, so the DOM holds no text
  to measure (the grid's own width is checked; what it shows is checked by AppTest in tests/app).
- st.multiselect's chip row: it scrolls sideways by design, the chosen items stay listed in its drop-down (the
  Prefix cache tab's four routing policies, which a reader compares, are checked to be in sight).
- code blocks (stCode): a command or link in one scrolls sideways and has a copy button.
- Streamlit's "skip to main content" link, which sits off-screen until focused, and text for screen readers only
  (a 1 px box that hides its overflow, as a select's "8 options available.").
Each failure names the page, the tab, and the text, table or chart and what is wrong with it. Screenshots are for
debugging only: set TTFT_TRUNCATION_SHOTS to a folder (under /tmp) to get one per page and tab.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page, expect

from planner.alerts.evaluate import evaluate_all
from planner.store import open_store
from planner.store.endpoints import get_or_create_manual_endpoint
from planner.store.probes import insert_samples
from planner.store.rtt import SampleRecord, insert_rtt_samples
from planner.store.sweeps import store_sweep
from tests.app.test_sweep_page import _one_slot_sweep
from tests.e2e.conftest import StreamlitServer, pick, seed_hostile, wait_for_app
from tests.support.alerts import slow_endpoint_with_rule
from tests.support.probe_rows import slot_row
from tests.support.router import router_pages
from tests.support.store_states import STATES, seed_state
from tests.support.store_template import seed_data_dir

WIDTH = 1400

# Text that is cut today on a page another change owns: (url path, text it starts with) → why and where to fix it.
# Remove an entry once its page is fixed.
# Finds cut text on the page as laid out now; returns [{text, where, why}].
FIND_CUT_TEXT = """
() => {
  const out = [];
  const cuts = (s) => ["hidden", "clip", "auto", "scroll"].includes(s);
  const exempt = "[data-testid='stSkipToContent'], [data-testid='stMultiSelectTagsContainer'], "
    + "[data-testid='stCode'], [data-testid='stDataFrame'], [data-testid='stDataFrameResizable']";
  // the page's own scrollers: what lies past their bottom is below the fold, not cut
  const scrollers = "[data-testid='stMain'], [data-testid='stAppViewContainer'], [data-testid='stSidebar'], "
    + "[data-testid='stSidebarContent']";
  const shown = (el) => {
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      const cs = getComputedStyle(e);
      if (cs.display === "none" || cs.visibility === "hidden" || cs.opacity === "0") return false;
      // text for screen readers only (a select's "8 options available."): a 1 px box that hides the rest
      const box = e.getBoundingClientRect();
      if (box.width <= 1 && box.height <= 1 && cuts(cs.overflowX)) return false;
    }
    return true;
  };
  const name = (el) => {
    const t = el.closest("[data-testid]");
    return (t ? t.getAttribute("data-testid") : "") + " <" + el.tagName.toLowerCase() + ">";
  };
  const seen = new Set();
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const text = n.textContent.trim();
    const el = n.parentElement;
    if (!text || !el || ["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE"].includes(el.tagName)) continue;
    if (el.closest(exempt)) continue;
    const d = el.closest("details");
    if (d && !d.open && !el.closest("summary")) continue;
    const range = document.createRange();
    range.selectNodeContents(n);
    const r = range.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || !shown(el)) continue;
    let why = null;
    if (getComputedStyle(el).textOverflow === "ellipsis" && el.scrollWidth > el.clientWidth + 1) why = "an ellipsis";
    for (let a = el; !why && a && a !== document.body; a = a.parentElement) {
      if (a instanceof SVGElement && a.tagName.toLowerCase() !== "svg") continue;  // only the SVG's own edge cuts
      const s = getComputedStyle(a);
      const ar = a.getBoundingClientRect();
      const outX = r.right > ar.right + 1.5 || r.left < ar.left - 1.5;
      const outY = r.bottom > ar.bottom + 1.5 || r.top < ar.top - 1.5;
      if (cuts(s.overflowX) && outX) why = "the side of " + name(a);
      else if (cuts(s.overflowY) && outY && !a.matches(scrollers)) why = "the bottom of " + name(a);
    }
    if (why && !seen.has(why + text)) {
      seen.add(why + text);
      out.push({ text: text.slice(0, 100), where: name(el), why });
    }
  }
  // A select box's chosen option and a filled-in field are an input's value, not a text node: cut when it is
  // wider than its box (the box scrolls it sideways, showing only the start).
  for (const el of document.querySelectorAll("input")) {
    if (["checkbox", "radio", "hidden", "file", "range"].includes(el.type) || !el.value || el.closest(exempt)) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || !shown(el)) continue;
    if (el.scrollWidth > el.clientWidth + 1) {
      out.push({ text: el.value.slice(0, 100), where: name(el), why: "its input box (" + el.clientWidth + " px)" });
    }
  }
  return out;
}
"""

# Each shown table: a grid that scrolls sideways (its last column cut at the edge), or a static table wider than the
# block it sits in. Returns [{what, content, box}] for those that do not fit.
TABLES_THAT_DO_NOT_FIT = """
() => {
  const out = [];
  const shown = (e) => e.getClientRects().length && e.getBoundingClientRect().width > 0;
  for (const grid of document.querySelectorAll("[data-testid='stDataFrame']")) {
    const s = grid.querySelector(".dvn-scroller");
    if (grid.closest("[class*='_editor']")) continue;  // a data editor (its key ends in _editor): a sheet to edit
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


# True once no element is left over from the previous run and every shown Plotly chart has drawn its SVG (its title
# and labels are what a cut would hide).
CHARTS_DRAWN = """
() => !document.querySelector("[data-stale='true']") && [...document.querySelectorAll("[data-testid='stPlotlyChart']")]
  .filter(c => c.getClientRects().length && c.getBoundingClientRect().width > 0)
  .every(c => c.querySelector(".main-svg .infolayer"))
"""

CONTENT_HEIGHT = (
    "() => Math.max(1000, ...[...document.querySelectorAll("
    "\"[data-testid='stMain'], [data-testid='stMainBlockContainer'], [data-testid='stSidebarContent']\")]"
    ".map(e => e.scrollHeight))"
)


#: The variable the seeded alert rule posts to: never set, so its delivery fails and the page shows why.
UNSET_HOOK = "TTFT_TRUNCATION_UNSET_HOOK"
MANUAL_SAMPLES = 24


def _seed_manual_alerts_regions(eng) -> None:
    """What only shows with data on Probes, Alerts and Regions: a manual endpoint's samples, a rule that fired on
    "slow-b" (history, and a delivery that failed), and RTT results of both sides with a failure of each."""
    now = int(time.time() * 1000)
    manual = get_or_create_manual_endpoint(eng, "http://127.0.0.1:8000/v1", "sim-1", "openai")
    insert_samples(
        eng,
        [slot_row(int(manual.id or 0), now - i * 300_000, 240.0 + i, kind="manual") for i in range(MANUAL_SAMPLES)],
    )
    slow_endpoint_with_rule(eng, now - 60_000, webhook_env=UNSET_HOOK, name="chat p95 over its target")
    evaluate_all(eng, now - 60_000)  # fires at once: a history row and a failed delivery
    evaluate_all(eng, now)
    server = [
        SampleRecord(region, region, "server", "tcp-connect", base + i, now - i * 60_000, vantage="", run_id="s1")
        for region, base in (("aws-eu-west-1", 18.0), ("aws-us-east-1", 84.0), ("gcp-us-central1", 101.0))
        for i in range(10)
    ]
    browser = [
        SampleRecord(
            "azure-westeurope", "x", "browser", "resource-timing", 22.0 + i, now - i * 60_000, vantage="Berlin office"
        )
        for i in range(10)
    ]
    failures = [
        SampleRecord(
            "openai-api",
            "api.openai.com:443",
            "server",
            "tcp-connect",
            None,
            now,
            vantage="",
            error_class="blocked-port",
            error_detail="no answer to the TCP SYN within the timeout, or a firewall rejected it: the port is "
            "filtered or the host is down",
        ),
        SampleRecord(
            "anthropic-api",
            "https://api.anthropic.com/",
            "browser",
            "resource-timing",
            None,
            now,
            vantage="Berlin office",
            error_class="blocked",
            error_detail="the browser blocked or could not complete the request (network error or a blocker): "
            "Failed to fetch",
        ),
    ]
    insert_rtt_samples(eng, [*server, *browser, *failures])


@pytest.fixture(scope="module")
def full_server(tmp_path_factory, attacker):
    """A server over a store with something to show on every page (see the module docstring)."""
    data = seed_data_dir(tmp_path_factory.mktemp("e2e-truncation"))
    seed_hostile(data, attacker.url)
    eng = open_store(f"sqlite:///{data / 'planner.db'}")
    for state in STATES[2:]:  # two endpoints with a day of samples and a cold reading, an uploaded log, a worksheet
        seed_state(eng, state)
    _seed_manual_alerts_regions(eng)
    store_sweep(eng, _one_slot_sweep(), vantage="ci", tool_version="test")
    eng.dispose()
    server = StreamlitServer(data, env={UNSET_HOOK: ""})
    yield server
    server.stop()


# True once no animation runs and every expander kept its height since the last poll (an opening expander grows).
SETTLED = """
() => {
  const heights = [...document.querySelectorAll("[data-testid='stExpander'] details")].map(d => d.clientHeight).join();
  const still = window.__truncationHeights === heights;
  window.__truncationHeights = heights;
  return still && document.getAnimations().every(a => a.playState !== "running");
}
"""


def _open_expanders(page: Page) -> None:
    """Open every shown expander (a click on its summary opens it in the browser, with no rerun), and wait until
    they have finished growing: measured while it opens, an expander cuts its own content."""
    for summary in page.locator("[data-testid='stExpander'] details:not([open]) > summary").element_handles():
        if summary.is_visible():
            summary.click()
            page.wait_for_function("s => s.parentElement.open", arg=summary)
    page.wait_for_function(SETTLED, polling=200)


def _overlaps(chart: dict) -> bool:
    (tl, tt, tr, tb), (ll, lt, lr, lb) = chart["title"], chart["legend"]
    return min(tr, lr) > max(tl, ll) and min(tb, lb) > max(tt, lt)


def _layout_faults(page: Page, where: str, shots: Path | None) -> list[str]:
    """Lay the page out as tall as its content (so nothing is below the fold), then list what is cut, every table
    that does not fit and every legend over its chart's title."""
    wait_for_app(page)
    page.set_viewport_size({"width": WIDTH, "height": min(int(page.evaluate(CONTENT_HEIGHT)) + 100, 16_000)})
    wait_for_app(page)  # (the page's scrollers are exempt below their bottom in any case: see FIND_CUT_TEXT)
    page.wait_for_function(CHARTS_DRAWN, polling=200)
    if shots:
        page.screenshot(path=str(shots / f"{re.sub(r'[^a-z0-9]+', '-', where.lower())}.png"))
    found = [f"{where}: {c['text']!r} ({c['where']}) is cut by {c['why']}" for c in page.evaluate(FIND_CUT_TEXT)]
    found += [
        f"{where}: a {t['what']} {t['content']} px wide in {t['box']} px" for t in page.evaluate(TABLES_THAT_DO_NOT_FIT)
    ]
    found += [
        f"{where}: the legend of {c['text']!r} lies over its title"
        for c in page.evaluate(TITLES_AND_LEGENDS)
        if _overlaps(c)
    ]
    return found


def _add_to_compare(page: Page) -> None:
    """Add "simulated" (a day of samples) to Compare's endpoints, beside the default picks, and wait for its
    worksheet verdicts (the comparison redrawn with it)."""
    wait_for_app(page)
    chosen = page.locator("[data-testid='stMultiSelect']").filter(has_text="Endpoints")
    tags = chosen.locator("[data-testid='stMultiSelectTagsContainer']")
    if "simulated" not in tags.inner_text().splitlines():  # not among the default picks: pick it from the list
        for _ in range(3):  # a rerun that lands while the list opens closes it again: open it once more
            chosen.locator("input").first.click()
            try:
                page.get_by_role("option", name="simulated", exact=True).click(timeout=10_000)
                break
            except PlaywrightError:
                page.keyboard.press("Escape")
    page.keyboard.press("Escape")
    expect(tags).to_contain_text("simulated")
    summaries = page.locator("[data-testid='stExpander'] summary")
    expect(summaries.filter(has_text="simulated: Inline completion")).to_have_count(1)
    wait_for_app(page)


def _probes_on(series: str, n: int) -> Callable[[Page], None]:
    """Pick the series whose label starts with `series` on Probes, and wait until its n samples are shown (the
    box shows the pick before the rerun that draws it)."""

    def get_there(page: Page) -> None:
        pick(page, "Endpoint @ vantage", re.compile("^" + re.escape(series) + " @ "))
        expect(page.locator("[data-testid='stMetricValue']").first).to_have_text(f"{n:,}")
        wait_for_app(page)

    return get_there


AZURE_SAMPLE = "Azure LLM inference trace 2023 (real rows, CC-BY 4.0)"  # a real trace, the longest sample title


def _logs_on_a_sample(page: Page) -> None:
    """Load the real Azure trace on Logs and wait for its headline percentiles (the page's tabs come with them)."""
    pick(page, "…or try a sample", AZURE_SAMPLE)
    page.get_by_role("button", name="Load sample").click()
    expect(page.locator("[data-testid='stMetricLabel']").filter(has_text="p95 prompt tokens").first).to_be_visible()
    wait_for_app(page)


def _whatif_on_a_sample(page: Page) -> None:
    """Replay the real Azure trace on What-if and wait for the verdict over its candidates."""
    pick(page, "…or a stored upload / sample", f"sample: {AZURE_SAMPLE}")
    verdict = page.get_by_text(re.compile(r"^(Cheapest candidate meeting|No candidate meets) the "))
    expect(verdict.first).to_be_visible()
    wait_for_app(page)


#: Pages that open on a selection without data (the first endpoint in the sidebar's order is a hostile one that
#: never answered) or without a log, walked again in each of these states: (state, how to get there from the page
#: as it opens).
DATA_STATES: dict[str, list[tuple[str, Callable[[Page], None]]]] = {
    "Probes": [
        ("a day of samples", _probes_on("acme-sim-eu", 720)),
        ("a manual endpoint", _probes_on("manual: sim-1", MANUAL_SAMPLES)),
    ],
    "Compare": [("with simulated", _add_to_compare)],
    "Logs": [("a real trace", _logs_on_a_sample)],
    "What-if": [("a real trace", _whatif_on_a_sample)],
}


def _walk(page: Page, where: str, shots: Path | None) -> list[str]:
    """What is wrong with the layout of the page as it is, then of each of its tabs."""
    _open_expanders(page)
    found = _layout_faults(page, where, shots)
    tabs = page.locator("[data-testid='stTab']")
    for i in range(tabs.count()):
        tab = tabs.nth(i)
        label = tab.inner_text()
        tab.click()
        expect(tab).to_have_attribute("aria-selected", "true")
        _open_expanders(page)
        found += _layout_faults(page, f"{where} › {label}", shots)
    return found


def test_nothing_is_cut_and_every_table_fits_on_any_page_at_1400_px(page: Page, full_server):
    shots_env = os.environ.get("TTFT_TRUNCATION_SHOTS")
    shots = Path(shots_env) if shots_env else None
    if shots:
        shots.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": WIDTH, "height": 1000})
    page.goto(full_server.url)
    cut: list[str] = []
    for _file, title, _icon, _url_path in router_pages():
        # through the sidebar, as a reader goes (the default page's deep link is the site's root)
        wait_for_app(page)
        page.set_viewport_size({"width": WIDTH, "height": 1000})
        link = page.locator("[data-testid='stSidebarNav']").get_by_role("link", name=title, exact=True)
        href = link.first.get_attribute("href") or ""
        link.first.click()
        expect(page).to_have_url(re.compile(re.escape(href) + r"(\?.*)?$"))
        wait_for_app(page)
        expect(page.locator("h1").first).to_be_visible()
        expect(page.locator("[data-testid='stSkeleton']")).to_have_count(0)
        found = _walk(page, title, shots)
        for state, get_there in DATA_STATES.get(title, []):
            page.set_viewport_size({"width": WIDTH, "height": 1000})
            get_there(page)
            found += _walk(page, f"{title} ({state})", shots)
        cut += list(dict.fromkeys(found))
    assert not cut, "laid out wrong at 1,400 px:\n" + "\n".join(cut)


def _gpu_fit_on_70b(page: Page, url: str) -> None:
    page.set_viewport_size({"width": WIDTH, "height": 1000})
    page.goto(f"{url}/capacity")
    wait_for_app(page)
    page.get_by_role("tab", name="GPU fit").click()
    pick(page, "Model", "Llama 3.1 70B")  # long labels: "needs 3, runs on 4 (tensor parallel)", "no single node"
    page.wait_for_function(CHARTS_DRAWN, polling=200)


def test_gpu_fit_bar_labels_keep_their_size_and_its_table_fits(page: Page, full_server):
    _gpu_fit_on_70b(page, full_server.url)
    expect(page.get_by_text("no single node").first).to_be_visible()
    sizes = page.evaluate(BAR_LABEL_PX)
    assert len(sizes) == 7 and min(sizes) >= 12, sizes  # one per GPU preset, none shrunk to fit its bar (12 px text)
    assert page.evaluate(TABLES_THAT_DO_NOT_FIT) == []


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


def test_the_prefix_tab_shows_every_routing_policy_chosen(page: Page, full_server):
    page.set_viewport_size({"width": WIDTH, "height": 1000})
    page.goto(f"{full_server.url}/capacity")
    wait_for_app(page)
    page.get_by_role("tab", name="Prefix cache").click()
    field = page.locator("[data-testid='stMultiSelect']", has_text="Routing policies")
    expect(field.locator("[data-testid='stMultiSelectTagsContainer'] [data-tag]")).to_have_count(4)
    assert page.evaluate(CHIPS_OUT_OF_SIGHT, "Routing policies") == []
