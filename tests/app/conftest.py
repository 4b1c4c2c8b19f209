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


def open_page(view: str, at: AppTest | None = None) -> AppTest:
    """The page `app/views/<view>.py` opened and run in `at` — by default a fresh AppTest of the whole app, run once
    on the default page first — after asserting it raised nothing."""
    if at is None:
        at = AppTest.from_file(ROUTER, default_timeout=60)
        at.run()
    at.switch_page(f"views/{view}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def plotly_array(v) -> list:
    """A Plotly trace array as a list: Plotly 7 ships arrays as base64 {"dtype", "bdata"[, "shape"]}."""
    import base64

    import numpy as np

    if isinstance(v, dict) and "bdata" in v:
        a = np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"])
        if "shape" in v:
            a = a.reshape([int(x) for x in v["shape"].split(",")])
        return a.tolist()
    return list(v)


def chart_spec(at, key: str) -> dict:
    """The figure JSON of the plotly_chart whose element id contains `key`."""
    import json

    return json.loads(next(c for c in at.get("plotly_chart") if c.proto.id and key in c.proto.id).proto.spec)
