"""Pages and exports under hostile names and server bodies, and under store faults (AppTest, real stores).

- No page and no export (CSV, Markdown, HTML) carries an unescaped image/link, script or spreadsheet formula that
  came from an endpoint name or a server's error body.
- A locked or unreachable database is one sentence on the page, never a traceback, and the page stays usable.
"""

from __future__ import annotations

import csv
import io
import re
import sqlite3

import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from streamlit.testing.v1 import AppTest

import planner.store.database as store_engine
from planner.cli import cli
from planner.store import open_store
from planner.store import probe_queries as pq
from tests.app.conftest import new_app
from tests.support.hostile import seed_failing_endpoints
from tests.support.store_template import migrated_sqlite

IMAGE = "![status](http://attacker.invalid/beacon.png)"
SCRIPT = "<script>alert(1)</script>"
FORMULA = '=HYPERLINK("http://attacker.invalid","x")'
NAMES = [f"img {IMAGE}", f"js {SCRIPT}", FORMULA, "@SUM(A1:A9)"]
UNESCAPED = re.compile(r"(?<!\\)!(?<!\\)\[|(?<!\\)\]\(|(?<!\\)<\s*(script|img)", re.IGNORECASE)
MARKDOWN_ELEMENTS = (
    "markdown",
    "caption",
    "warning",
    "error",
    "info",
    "success",
    "title",
    "header",
    "subheader",
    "toast",
)


def _seed(url: str) -> None:
    eng = open_store(url)
    seed_failing_endpoints(
        eng,
        NAMES,
        f"HTTP 401 from https://api.example.com/v1: {IMAGE} {SCRIPT}",
        step_ms=50,
        n=60,
        region=f"r {IMAGE}",
        errors=3,
    )
    eng.dispose()


def _markdown_texts(at: AppTest) -> list[str]:
    out = []
    for kind in MARKDOWN_ELEMENTS:
        out += [str(getattr(e, "value", "")) for e in at.get(kind)]
    out += [e.label for e in at.get("expander")]
    for t in at.table:  # st.table renders Markdown in every cell and header
        out += [str(v) for v in t.value.astype(object).to_numpy().ravel()] + [str(c) for c in t.value.columns]
    return out


def _assert_no_live_markup(at: AppTest, page: str) -> None:
    assert not at.exception, at.exception
    texts = _markdown_texts(at)
    assert any("attacker" in t for t in texts), (page, texts)  # the hostile text is shown, as text
    for t in texts:
        assert not UNESCAPED.search(t), f"{page}: live markup in {t!r}"


@pytest.fixture
def hostile_store(tmp_path, monkeypatch):
    url = migrated_sqlite(tmp_path / "hostile.db")
    monkeypatch.setenv("TTFT_PLANNER_DATABASE_URL", url)
    _seed(url)
    return url


def test_pages_show_hostile_names_and_bodies_as_text(hostile_store):
    at = new_app()
    for page in ("endpoints", "probes", "compare"):
        at.switch_page(f"views/{page}.py").run()
        _assert_no_live_markup(at, page)


def test_exports_carry_no_formula_script_or_image(hostile_store, tmp_path):
    out = tmp_path / "r.html"
    md, csv_path = tmp_path / "r.md", tmp_path / "r.csv"
    args = [
        "report",
        "--out",
        str(out),
        "--markdown",
        str(md),
        "--csv",
        str(csv_path),
        "--database-url",
        hostile_store,
        "--since",
        "2026-11-26",
        "--until",
        "2026-12-01",
    ]
    for name in NAMES:  # one --endpoints per name: names with commas and quotes pass whole
        args += ["--endpoints", name]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    cells = [c for row in csv.reader(io.StringIO(csv_path.read_text())) for c in row]
    assert any(FORMULA in c for c in cells)
    assert not [c for c in cells if c[:1] in ("=", "+", "@", "\t", "\r") or (c[:1] == "-" and not _is_number(c))]
    text = md.read_text()
    assert "attacker.invalid" in text and not UNESCAPED.search(text)
    html = out.read_text()
    assert SCRIPT not in html and not re.search(r"<img[^>]+attacker", html) and "attacker.invalid" in html
    eng = open_store(hostile_store)
    key = next(k for k in pq.series_keys(eng) if k.endpoint_name == FORMULA and k.vantage == "office")
    probes_csv = pq.export_csv(eng, key, 0, 2**62)
    eng.dispose()
    rows = list(csv.reader(io.StringIO(probes_csv)))
    assert len(rows) > 60 and all(r[0] == "'" + FORMULA for r in rows[1:])


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def test_add_endpoint_on_a_locked_database_is_one_sentence(tmp_path, monkeypatch):
    db = tmp_path / "locked.db"
    monkeypatch.setenv("TTFT_PLANNER_DATABASE_URL", migrated_sqlite(db))
    # The write waits out SQLite's busy timeout before it fails as "locked": 0.25 s instead of 5 s. How long it waits
    # is not what this test is about; the sentence is.
    monkeypatch.setattr(store_engine, "SQLITE_BUSY_TIMEOUT_MS", 250)
    at = new_app()
    at.switch_page("views/endpoints.py").run()
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        for k, v in {"name": "eu", "base_url": "https://api.example.com/v1", "model": "m"}.items():
            at.text_input(key=f"add_{k}").set_value(v)
        [b for b in at.button if b.label == "Add endpoint"][0].click().run()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert not at.exception, at.exception
    [err] = [e.value for e in at.error if "database" in e.value]
    assert "locked" in err and "your changes were not saved" in err and "INSERT" not in err
    assert [e for e in at.expander if "Import / export" in e.label], "the rest of the page still renders"


@pytest.mark.postgres
def test_pages_with_postgres_down_are_one_sentence(pg_store_url, monkeypatch):
    pg_url = pg_store_url
    monkeypatch.setenv("TTFT_PLANNER_DATABASE_URL", pg_url)
    _seed(pg_url)
    at = new_app()
    at.switch_page("views/endpoints.py").run()
    assert not at.exception, at.exception
    db = pg_url.rsplit("/", 1)[1]
    admin = sa.create_engine(pg_url.rsplit("/", 1)[0] + "/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:  # the server goes away for this database: no new connections, old ones cut
        conn.execute(sa.text(f'ALTER DATABASE "{db}" ALLOW_CONNECTIONS false'))
        conn.execute(
            sa.text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :db").bindparams(db=db)
        )
    try:
        for page in ("endpoints", "probes", "compare", "worksheet"):
            at.switch_page(f"views/{page}.py").run()
            assert not at.exception, (page, at.exception)
            errors = [e.value for e in at.error if "database" in e.value]
            assert errors and ("unreachable" in errors[0] or "not available" in errors[0]), (
                page,
                [e.value for e in at.error],
            )
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'ALTER DATABASE "{db}" ALLOW_CONNECTIONS true'))
        admin.dispose()
