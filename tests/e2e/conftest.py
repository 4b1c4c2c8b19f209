"""Real-browser fixtures: `streamlit run` on a free port, Playwright driving Debian's Chromium.

A Streamlit server takes seconds to start, so the modules that need no data of their own share one per test process:
`app_server` / `app_url`, over a temp data directory (never a user's database) whose store holds two endpoints named
with outside markup (an image link to the `attacker` server on loopback, an HTML tag) and failing with a 401 body
that carries one too. Every page those modules open therefore shows hostile text, which must stay text and never be
fetched (test_every_page.py checks that on each page). Under pytest-xdist each module is a group of its own, so
the shared server starts at most once per worker process; a module with its own server (its own seeded store, a
worker, sign-in) starts it once.
What the shared modules write (a saved worksheet, an added endpoint, RTT targets) no other module relies on.
Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import http.server
import os
import re
import shutil
import socket
import subprocess
import threading
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, BrowserType, Page, Playwright, expect, sync_playwright
from playwright.sync_api import Error as PlaywrightError

from planner.cli.worker import dashboard_argv
from planner.store import open_store
from tests.support.browser import CHROMIUM_ARGS
from tests.support.hostile import seed_failing_endpoints
from tests.support.stopping import stop_process
from tests.support.store_template import seed_data_dir
from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"

# How long any browser wait may take before the test fails. It is a hang guard, not a speed check (bench/ checks
# speed): a wait that succeeds returns at once. Four suites at once on 2 cores (load 19) drew some pages in over 30 s;
# at load 55 a first run of the Capacity page took over 90 s.
UI_WAIT_MS = 180_000
expect.set_options(timeout=UI_WAIT_MS)
# How long a process (Streamlit, a provider) may take to answer its first request: a hang guard too.
START_S = 120.0


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own, which reads the xdist_group marks to share out the work
def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/e2e/" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)
            # Under pytest-xdist (--dist loadgroup) a module's tests stay on one worker, so a module's own server
            # starts once; the shared server starts at most once per worker (modules on it run side by side).
            item.add_marker(pytest.mark.xdist_group(f"e2e:{item.module.__name__}"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answers(url: str) -> bool:
    """Whether `url` answers 200 now (a server that is still starting refuses the connection)."""
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status == 200
    except OSError:
        return False


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """pytest-playwright hook: use the system Chromium (playwright install cannot download here)."""
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not os.path.exists(chromium):
        if os.environ.get("CI") == "true":
            pytest.fail("Chromium is not installed: run scripts/install-system-deps.sh")
        pytest.skip("Chromium is not installed")
    return {**browser_type_launch_args, "executable_path": chromium, "args": CHROMIUM_ARGS}


# pytest-playwright starts Playwright once per session. Its sync API keeps an asyncio loop running in the main thread
# until it stops, so no test after it in the same process could call asyncio.run(). Here it lives for one module:
# under pytest-xdist a worker can then take a browser module first and other tests after it, in any order.


@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    """Playwright for the length of one test module (see above)."""
    pw = sync_playwright().start()
    yield pw
    pw.stop()


@pytest.fixture(scope="module")
def browser_type(playwright: Playwright, browser_name: str) -> BrowserType:
    return getattr(playwright, browser_name)


@pytest.fixture(scope="module")
def launch_browser(browser_type_launch_args: dict, browser_type: BrowserType) -> Callable[..., Browser]:
    def launch(**kwargs) -> Browser:
        return browser_type.launch(**{**browser_type_launch_args, **kwargs})

    return launch


@pytest.fixture(scope="module")
def browser(launch_browser: Callable[..., Browser]) -> Iterator[Browser]:
    b = launch_browser()
    yield b
    b.close()


@pytest.fixture(scope="session")
def browser_context_args() -> dict:
    """Plain contexts (no device emulation, base URL or video; pytest-playwright's own would need Playwright for the
    whole session)."""
    return {}


@pytest.fixture
def context(context: BrowserContext) -> BrowserContext:
    """pytest-playwright's context (and so its `page`), with the suite's wait limit."""
    context.set_default_timeout(UI_WAIT_MS)
    return context


def new_context(browser: Browser, **options) -> BrowserContext:
    """A second browser context (another user, offline, another viewport) with the suite's wait limit."""
    context = browser.new_context(**options)
    context.set_default_timeout(UI_WAIT_MS)
    return context


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


class StreamlitServer:
    """A `streamlit run app/streamlit_app.py` process with its own data directory."""

    def __init__(
        self, data_dir: Path, env: dict[str, str] | None = None, *, port: int | None = None, args: tuple[str, ...] = ()
    ) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.data_dir = data_dir
        if not (data_dir / "planner.db").exists() and "TTFT_PLANNER_DATABASE_URL" not in (env or {}):
            seed_data_dir(data_dir)  # the migration chain ran once for the whole session
        full_env = {**os.environ, "TTFT_PLANNER_DATA_DIR": str(data_dir), **(env or {})}
        full_env.pop("TTFT_PLANNER_DATABASE_URL", None) if "TTFT_PLANNER_DATABASE_URL" not in (env or {}) else None
        self.log = open(data_dir / "streamlit.log", "w")
        self.proc = subprocess.Popen(
            dashboard_argv(self.port, "127.0.0.1", "--server.fileWatcherType=none", *args),
            cwd=ROOT,
            env=full_env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        health = self.url + "/_stcore/health"
        try:  # until it answers, or exits (a bad flag, a port taken): then the log says why
            wait_for(lambda: self.proc.poll() is not None or answers(health), START_S, "Streamlit's health check")
            healthy = self.proc.poll() is None
        except AssertionError:
            healthy = False
        if not healthy:
            self.stop()
            log = (data_dir / "streamlit.log").read_text()[-2000:]
            raise RuntimeError(f"streamlit did not become healthy; log: {log}")

    def stop(self) -> None:
        stop_process(self.proc, self.log)


class Attacker:
    """An HTTP server on loopback that records every request it gets: a page that fetches outside markup (an image
    in an endpoint's name) shows up in `hits`."""

    def __init__(self) -> None:
        hits: list[str] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            disable_nagle_algorithm = True  # TCP_NODELAY, like every local test server

            def do_GET(self):  # noqa: N802
                hits.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.hits = hits
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


#: An endpoint name and a server error body carrying these must show them as text (and fetch nothing).
HOSTILE_NAMES = ("img {image}", "<img src=x onerror=alert(1)>")
HOSTILE_IMAGE = "![status]({attacker}/beacon.png)"


def seed_hostile(data_dir: Path, attacker: str) -> None:
    """Two probed endpoints named with outside markup, each failing (on two vantages) with a 401 body carrying an
    image link to `attacker` and a script tag: what a misbehaving provider or a careless teammate could store."""
    eng = open_store(f"sqlite:///{data_dir / 'planner.db'}")
    image = HOSTILE_IMAGE.format(attacker=attacker)
    names = [name.format(image=image) for name in HOSTILE_NAMES]
    seed_failing_endpoints(
        eng, names, f"HTTP 401 from https://api.example.com/v1: {image} <script>alert(1)</script>", n=40
    )
    eng.dispose()


@pytest.fixture(scope="session")
def attacker():
    """The loopback server the hostile names in the shared store point at."""
    server = Attacker()
    yield server
    server.stop()


#: The shared server's environment: one provider key present, one missing (the Endpoints catalog names both).
SHARED_ENV = {"GROQ_API_KEY": "gsk_e2e_never_shown", "MISTRAL_API_KEY": ""}


@pytest.fixture(scope="session")
def app_server(tmp_path_factory, attacker):
    """The Streamlit server shared by every module that brings no data of its own (see the module docstring)."""
    data = seed_data_dir(tmp_path_factory.mktemp("e2e-shared"))
    seed_hostile(data, attacker.url)
    server = StreamlitServer(data, env=SHARED_ENV)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def app_url(app_server) -> str:
    return app_server.url


# An auto-refreshing fragment (`st.fragment(run_every=…)`, Probes' live view) is a timer in the browser
# (`setInterval`), which Streamlit clears when the next full run's first message arrives. Its tick can land anywhere in
# its period: in the window between a click that leaves the page and that message it once blanked the next page, about
# 1 run in 8 on a loaded machine (worksheet_state._forget_fragments). This script, added before the app loads, lets a
# test fire every live timer of the app at once and then every 25 ms until the app clears it, so that the window is
# always hit, whatever the machine's speed.
_TICKS_JS = """
(() => {
  const live = new Map();  // interval id -> {fn, storm}
  const setI = window.setInterval.bind(window), clearI = window.clearInterval.bind(window);
  window.setInterval = (fn, ms, ...args) => {
    const id = setI(fn, ms, ...args);
    if (typeof fn === "function" && ms >= 1000) live.set(id, {fn});
    return id;
  };
  window.clearInterval = (id) => {
    const t = live.get(id);
    if (t) { if (t.storm) clearI(t.storm); live.delete(id); }
    return clearI(id);
  };
  window.__ttftTicks = {
    fired: 0,
    start() {
      for (const t of live.values()) {
        const tick = () => { this.fired += 1; t.fn(); };
        tick();
        t.storm = setI(tick, 25);
      }
      return live.size;
    },
    stop() { for (const t of live.values()) if (t.storm) { clearI(t.storm); t.storm = undefined; } },
    live() { return live.size; },
  };
})();
"""


def track_auto_refresh(page: Page) -> None:
    """Let `tick_auto_refresh` fire the app's auto-refresh timers in `page` (call before the app loads)."""
    page.add_init_script(_TICKS_JS)


def tick_auto_refresh(page: Page) -> int:
    """Fire every auto-refresh timer of the app now, and again every 25 ms until the app clears it (it does when the
    next full run begins, e.g. on another page); returns how many timers there were."""
    return int(page.evaluate("window.__ttftTicks.start()"))


def stop_auto_refresh_ticks(page: Page) -> int:
    """Stop what `tick_auto_refresh` started; returns how many ticks it fired."""
    return int(page.evaluate("(window.__ttftTicks.stop(), window.__ttftTicks.fired)"))


def wait_for_app(page) -> None:
    """Wait until the Streamlit script run has finished."""
    page.locator("[data-testid='stApp'][data-test-script-state='notRunning']").wait_for(state="attached")


def pick(page: Page, select_label: str, option: str | re.Pattern[str]) -> None:
    """Choose `option` (its label, or a pattern it matches) in the select box labelled `select_label`, and wait until
    the box shows it after the rerun it starts (a click can land before that rerun begins: waiting for the script
    to be idle alone would read the page the previous choice drew)."""
    wait_for_app(page)
    box = page.get_by_role("combobox", name=select_label, exact=True)
    for attempt in range(3):  # a rerun that lands while the list opens closes it again: open it once more
        box.click()
        try:
            # the last try waits as long as any browser wait: a slow machine is not a failure
            page.get_by_role("option", name=option, exact=isinstance(option, str)).click(
                timeout=10_000 if attempt < 2 else UI_WAIT_MS
            )
            break
        except PlaywrightError:
            page.keyboard.press("Escape")
    else:
        raise AssertionError(f"could not pick {option!r} in {select_label!r}")
    wait_for_app(page)
    expect(box).to_have_value(option)


def open_expander(page: Page, label: str) -> None:
    """Open the expander titled `label` (a click on its summary) unless it is open already."""
    wait_for_app(page)
    details = page.locator("[data-testid='stExpander'] details").filter(has=page.locator("summary", has_text=label))
    if details.first.get_attribute("open") is None:
        details.first.locator("summary").first.click()
    expect(details.first).to_have_attribute("open", "")
