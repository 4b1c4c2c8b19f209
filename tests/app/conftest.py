"""AppTest fixtures: every test gets its own temp data directory (a fresh SQLite store)."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROUTER = str(Path(__file__).resolve().parents[2] / "app" / "streamlit_app.py")


@pytest.fixture(autouse=True)
def _temp_store(tmp_path, monkeypatch):
    monkeypatch.setenv("TTFT_PLANNER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("TTFT_PLANNER_DATABASE_URL", raising=False)


@pytest.fixture
def app():
    """An AppTest of the whole app (router), not yet run."""
    return AppTest.from_file(ROUTER, default_timeout=60)
