"""AppTest: the Sources page (issue 32) on a real PostgreSQL holding the LiteLLM proxy's own schema — add a source,
Test it, Sync now, the production TTFT it shows against the library's, a URL that is never shown — and the Logs page
opening a source (picker and link) like a stored upload."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from planner.logs import read_logs
from planner.logs.summary import summarize_logs
from planner.sources.sync import sync_source
from planner.stats import summarize
from planner.store import open_store
from planner.store.logs import save_upload
from planner.store.sources import (
    SourceKind,
    add_source,
    get_source,
    list_sources,
    load_source_frame,
    load_source_requests,
)
from tests.app.conftest import new_app, open_page, shown_table
from tests.planner import test_sources_litellm as library_tests
from tests.planner.test_sources_litellm import _insert, _requests

# The library tests' fixtures: a LiteLLM database made by litellm-proxy-extras' own migrations (a session template)
# and a copy per test, with a password in its URL (the test server trusts local connections: it is never checked).
litellm_template = library_tests.litellm_template
proxy_db = library_tests.proxy_db

pytestmark = pytest.mark.postgres

VAR = "LITELLM_PAGE_TEST_DSN"  # the environment variable the source names
PASSWORD = "s3cret-pw"  # in proxy_db's URL
SAMPLES = Path(__file__).resolve().parents[2] / "assets" / "sample_logs"


def _every_text(at: AppTest) -> str:
    """Everything the page sent to the browser, as text: every element's and block's message (labels, bodies,
    help, options, table bytes) and every table's cells."""
    out: list[str] = []

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None:
            out.append(str(proto))
        try:
            value = getattr(node, "value", None)
        except Exception:  # noqa: BLE001 — some element types raise for attributes they lack
            value = None
        if isinstance(value, pd.DataFrame):
            out.append(value.to_string())
        elif isinstance(value, str):
            out.append(value)
        for child in (getattr(node, "children", None) or {}).values():
            walk(child)

    walk(at._tree)
    return "\n".join(out)


def _assert_no_url(at: AppTest, dsn: str, *, database_named: bool = False) -> None:
    """Neither the URL nor its password nor its redacted form is on the page; nor the database's name, unless the
    database's own message names it (`database_named`: 'database "x" does not exist')."""
    text = _every_text(at)
    assert at.title[0].value in text and "Time zone" in text  # the walk reaches the page and the sidebar
    assert PASSWORD not in text and dsn not in text
    assert "planner:***@" not in text and "://planner@" not in text and "://planner:" not in text
    assert database_named or dsn.rsplit("/", 1)[1] not in text, "a URL, even redacted, names the database"


def _button(at: AppTest, label: str):
    return next(b for b in at.button if b.label == label)


def _add_on_the_page(at: AppTest, name: str, var: str) -> AppTest:
    at.text_input(key="sources_add_name").input(name)
    at.text_input(key="sources_add_var").input(var)
    _button(at, "Add source").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _ttft_p95(ms: float | None) -> str:
    return "—" if ms is None else f"{ms:,.0f} ms"


def test_add_test_and_sync_show_the_counts_and_the_librarys_ttft_and_never_the_url(proxy_db, monkeypatch):
    _insert(proxy_db, _requests(120))
    monkeypatch.setenv(VAR, proxy_db)
    at = open_page("sources")
    assert any("No sources yet" in i.value for i in at.info)
    _add_on_the_page(at, "prod", VAR)
    assert any("Added prod" in s.value for s in at.success)
    eng = open_store()
    [src] = list_sources(eng)
    assert (src.name, src.kind, src.secret_ref, src.n_requests) == ("prod", SourceKind.LITELLM, VAR, 0)
    _assert_no_url(at, proxy_db)

    at.button(key=f"sources_test_{src.id}").click().run()
    assert not at.exception
    found = [s.value for s in at.success if "holds" in s.value]
    # T0 = 2026-11-16 09:00:00 UTC, one request a second (the viewer's zone is UTC in a test)
    assert found and "holds 120 requests, first 2026-11-16 09:00 UTC, last 2026-11-16 09:01 UTC" in found[0]
    _assert_no_url(at, proxy_db)

    at.button(key=f"sources_sync_{src.id}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    metrics = {m.label: m.value for m in at.metric}
    assert (metrics["Read"], metrics["New"], metrics["Left out"]) == ("120", "120", "0")
    # the library's figure over the same rows (the CLI's `sources sync` computes it so), and by hand: TTFT of request
    # i is 150 + i ms, so the nearest-rank p95 of 120 is the 114th value and the p50 the 60th
    library = summarize(r["ttft_ms"] for r in load_source_requests(eng, src.id))
    assert library["p95"].value == 150 + 113 and library["p50"].value == 150 + 59
    assert metrics["Production TTFT p95"] == _ttft_p95(library["p95"].value) == "263 ms"
    assert metrics["Production TTFT p50"] == _ttft_p95(library["p50"].value)
    assert any("read 120 requests" in s.value and "120 kept" in s.value for s in at.success)
    [link] = at.get("page_link")  # to the Logs page, with this source on show (?log=source-<id>)
    assert link.proto.page == "logs" and link.proto.query_string == f"log=source-{src.id}"
    row = shown_table(at).iloc[0]
    assert row["Requests kept"] == "120" and row["URL from"] == f"${VAR}" and row["Last error"] == "—"
    assert row["Read up to"] == "2026-11-16 09:01 UTC" and row["Last synced"] != "never"
    _assert_no_url(at, proxy_db)

    # a second sync reads the overlap again and keeps nothing twice
    _insert(proxy_db, _requests(5, start_s=120))
    at.button(key=f"sources_sync_{src.id}").click().run()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["New"] == "5" and shown_table(at).iloc[0]["Requests kept"] == "125"

    # Remove asks for the tick first
    at.button(key=f"sources_remove_{src.id}").click().run()
    assert any("Tick" in w.value for w in at.warning) and len(list_sources(eng)) == 1
    at.checkbox(key=f"sources_sure_{src.id}").check().run()
    at.button(key=f"sources_remove_{src.id}").click().run()
    assert not at.exception and list_sources(eng) == []
    assert any("Removed prod and its 125 stored requests" in s.value for s in at.success)
    _assert_no_url(at, proxy_db)


def test_an_unset_variable_is_named_and_a_bad_database_is_one_sentence_without_its_url(proxy_db, monkeypatch):
    monkeypatch.delenv(VAR, raising=False)
    eng = open_store()
    add_source(eng, "prod", SourceKind.LITELLM, VAR)
    src = get_source(eng, "prod")
    at = open_page("sources")
    assert shown_table(at).iloc[0]["URL from"] == f"${VAR} (not set on this server)"
    for action in ("test", "sync"):
        at.button(key=f"sources_{action}_{src.id}").click().run()
        assert not at.exception
        [error] = at.error
        assert error.value.startswith(f"\\${VAR} is not set on the dashboard's server: set it there")

    # the variable holds another database's URL
    monkeypatch.setenv(VAR, f"mysql://root:{PASSWORD}@db.internal/litellm")
    at.button(key=f"sources_test_{src.id}").click().run()
    [error] = at.error
    assert error.value == f"\\${VAR} does not hold a PostgreSQL URL: it should be postgresql://user:password@host/db."
    _assert_no_url(at, f"mysql://root:{PASSWORD}@db.internal/litellm")

    # the variable holds a URL to a database that is not there: one sentence, with no URL in it
    wrong = proxy_db.rsplit("/", 1)[0] + "/no_such_db"
    monkeypatch.setenv(VAR, wrong)
    for action in ("test", "sync"):
        at.button(key=f"sources_{action}_{src.id}").click().run()
        assert not at.exception
        [error] = at.error
        assert 'database "no_such_db" does not exist' in error.value and f"the database in \\${VAR}" in error.value
        assert "\n" not in error.value and "Traceback" not in error.value
        _assert_no_url(at, wrong, database_named=True)
    last_error = shown_table(at).iloc[0]["Last error"]
    assert "no_such_db" in last_error and "://" not in last_error and "***" not in last_error

    # a URL typed where the variable's name goes is refused, and neither kept nor shown
    _add_on_the_page(at, "typed-url", proxy_db)
    assert any("not the URL itself" in e.value for e in at.error)
    assert [s.name for s in list_sources(eng)] == ["prod"]
    assert at.text_input(key="sources_add_var").value == ""
    _assert_no_url(at, proxy_db)


def test_the_logs_page_opens_a_source_like_a_stored_upload_and_a_link_reopens_it(proxy_db, monkeypatch):
    _insert(proxy_db, _requests(120))
    monkeypatch.setenv(VAR, proxy_db)
    eng = open_store()
    upload_id = save_upload(eng, "team.jsonl", read_logs([SAMPLES / "openai_chat_completions.jsonl"]))
    add_source(eng, "prod", SourceKind.LITELLM, VAR)
    src = get_source(eng, "prod")
    assert src.id == upload_id == 1, "an upload and a source with the same id: the picker tells them apart"
    sync_source(eng, src)
    expected = summarize_logs(load_source_frame(eng, src.id)).ttft["p95"]
    assert expected.value == 263.0 and expected.n == 120

    at = open_page("logs")
    picker = at.selectbox(key="logs_stored")
    assert "production: prod (LiteLLM, 120 requests)" in picker.options
    picker.set_value(f"source-{src.id}")
    at.button(key="logs_open_stored").click().run()
    assert not at.exception, [e.value for e in at.exception]
    _shows_the_source(at, expected.value, 120)
    assert at.query_params["log"] == f"source-{src.id}"
    _assert_no_url(at, proxy_db)

    # a link opens it in a new session, and the upload with the same id stays the upload
    linked = new_app()
    linked.query_params["log"] = f"source-{src.id}"
    _shows_the_source(open_page("logs", linked), expected.value, 120)
    assert linked.selectbox(key="logs_stored").value == f"source-{src.id}"
    upload = new_app()
    upload.query_params["log"] = f"upload-{upload_id}"
    assert "stored upload “team.jsonl”" in open_page("logs", upload).success[0].value
    assert upload.selectbox(key="logs_stored").value == upload_id
    gone = new_app()
    gone.query_params["log"] = "source-99"
    open_page("logs", gone)
    assert any("The link names a stored log that is not here" in i.value for i in gone.info)
    assert "log" not in gone.query_params

    # after a sync the page reads the source again
    _insert(proxy_db, _requests(30, start_s=120))
    sync_source(eng, get_source(eng, "prod"))
    at.run()
    _shows_the_source(at, summarize_logs(load_source_frame(eng, src.id)).ttft["p95"].value, 150)


def _shows_the_source(at: AppTest, ttft_p95: float, n: int) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert at.success[0].value == f"Showing production traffic from the LiteLLM proxy, source “prod”: {n:,} requests."
    assert any("Production traffic from the LiteLLM proxy: source “prod”" in c.value for c in at.caption)
    [ttft] = [t.value for t in at.dataframe if "what" in t.value and (t.value["what"] == "TTFT users waited").any()]
    p95 = ttft.loc[ttft["percentile"] == "p95"].iloc[0]
    assert p95["value"] == ttft_p95 and p95["n"] == n
    charts = {c.proto.id for c in at.get("plotly_chart")}
    for key in ("logs_hist", "logs_prompt_hour", "logs_traffic", "logs_cold", "logs_ttft_hour"):
        assert any(key in c for c in charts), f"the {key} chart is drawn for a source"
