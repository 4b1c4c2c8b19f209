"""Real-browser fixtures: `streamlit run` on a free port, Playwright driving Debian's Chromium.

Every e2e test gets the app at `app_url` over a fresh temp data directory, so
tests never touch a user's database. Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, expect

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]

# How long any browser wait may take before the test fails. It is a hang guard, not a speed check (bench/ checks
# speed): a wait that succeeds returns at once. Four suites at once on 2 cores (load 19) drew some pages in over 30 s.
UI_WAIT_MS = 90_000
expect.set_options(timeout=UI_WAIT_MS)


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/e2e/" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """pytest-playwright hook: use the system Chromium (playwright install cannot download here)."""
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not os.path.exists(chromium):
        if os.environ.get("CI") == "true":
            pytest.fail("Chromium is not installed: run scripts/install-system-deps.sh")
        pytest.skip("Chromium is not installed")
    return {**browser_type_launch_args, "executable_path": chromium, "args": CHROMIUM_ARGS}


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
        full_env = {**os.environ, "TTFT_PLANNER_DATA_DIR": str(data_dir), **(env or {})}
        full_env.pop("TTFT_PLANNER_DATABASE_URL", None) if "TTFT_PLANNER_DATABASE_URL" not in (env or {}) else None
        self.log = open(data_dir / "streamlit.log", "w")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streamlit",
                "run",
                str(ROOT / "app" / "streamlit_app.py"),
                "--server.headless=true",
                f"--server.port={self.port}",
                "--server.address=127.0.0.1",
                "--browser.gatherUsageStats=false",
                "--server.fileWatcherType=none",
                "--server.enableStaticServing=true",
                *args,
            ],
            cwd=ROOT,
            env=full_env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if urllib.request.urlopen(self.url + "/_stcore/health", timeout=1).read() == b"ok":
                    return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"streamlit did not become healthy; log: {(data_dir / 'streamlit.log').read_text()[-2000:]}")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


@pytest.fixture(scope="module")
def app_server(tmp_path_factory):
    """A Streamlit server for the test module, over a fresh data dir (SQLite)."""
    server = StreamlitServer(tmp_path_factory.mktemp("e2e-data"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def app_url(app_server) -> str:
    return app_server.url


def wait_for_app(page) -> None:
    """Wait until the Streamlit script run has finished."""
    page.locator("[data-testid='stApp'][data-test-script-state='notRunning']").wait_for(state="attached")
