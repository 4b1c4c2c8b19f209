"""AppTest: the Sources page (issue 32) on a real PostgreSQL holding the LiteLLM proxy's own schema — add a source,
Test it, Sync now, the production TTFT it shows against the library's, a URL that is never shown — and the Logs page
opening a source (picker and link) like a stored upload; and the Prometheus section on a real Prometheus scraping the
built-in simulator: the library's hours, a clear error, the queue p95 handed to the worksheet with its provenance."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from planner.logs import read_logs
from planner.logs import summarize as summarize_log
from planner.percentiles import summarize
from planner.simulator import SimulatorConfig, running_simulator
from planner.simulator.app import build_app
from planner.sources.prometheus import HOUR_MS, ttft_by_hour
from planner.sources.sync import sync_source
from planner.store import open_store
from planner.store.logs import save_upload
from planner.store.sources import (
    SourceKind,
    add_source,
    get_source,
    list_sources,
    load_source_frame,
    load_source_requests,
    store_batch,
)
from planner.worksheet.provenance import Source
from tests.app.conftest import new_app, open_page, shown_table
from tests.planner.sources import test_sources_litellm as library_tests
from tests.planner.sources.test_sources_litellm import _insert, _requests
from tests.support.page_text import every_text as _every_text
from tests.support.prometheus import running_prometheus
from tests.support.waiting import wait_for

# Each module that starts a real Prometheus runs on one xdist worker: two at once would compete for the same cores.
pytestmark = pytest.mark.xdist_group("prometheus")

# The library tests' fixtures: a LiteLLM database made by litellm-proxy-extras' own migrations (a session template)
# and a copy per test, with a password in its URL (the test server trusts local connections: it is never checked).
litellm_template = library_tests.litellm_template
proxy_db = library_tests.proxy_db

postgres = pytest.mark.postgres  # the LiteLLM tests; the Prometheus ones need no PostgreSQL

VAR = "LITELLM_PAGE_TEST_DSN"  # the environment variable the source names
PASSWORD = "s3cret-pw"  # in proxy_db's URL
SAMPLES = Path(__file__).resolve().parents[2] / "assets" / "sample_logs"


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


@postgres
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


@postgres
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
        assert error.value.startswith(f"prod: \\${VAR} is not set on this server: set it to the LiteLLM proxy's")

    # the variable holds another database's URL
    monkeypatch.setenv(VAR, f"mysql://root:{PASSWORD}@db.internal/litellm")
    at.button(key=f"sources_test_{src.id}").click().run()
    [error] = at.error
    assert (
        error.value
        == f"prod: \\${VAR} does not hold a PostgreSQL URL: it should be postgresql://user:password@host/db."
    )
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
    assert any("not its value: the value you gave was not stored or shown" in e.value for e in at.error)
    assert [s.name for s in list_sources(eng)] == ["prod"]
    assert at.text_input(key="sources_add_var").value == ""
    _assert_no_url(at, proxy_db)


@postgres
def test_the_logs_page_opens_a_source_like_a_stored_upload_and_a_link_reopens_it(proxy_db, monkeypatch):
    _insert(proxy_db, _requests(120))
    monkeypatch.setenv(VAR, proxy_db)
    eng = open_store()
    upload_id = save_upload(eng, "team.jsonl", read_logs([SAMPLES / "openai_chat_completions.jsonl"]))
    add_source(eng, "prod", SourceKind.LITELLM, VAR)
    src = get_source(eng, "prod")
    assert src.id == upload_id == 1, "an upload and a source with the same id: the picker tells them apart"
    sync_source(eng, src)
    expected = summarize_log(load_source_frame(eng, src.id)).ttft["p95"]
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
    _shows_the_source(at, summarize_log(load_source_frame(eng, src.id)).ttft["p95"].value, 150)


def _shows_the_source(at: AppTest, ttft_p95: float, n: int) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert at.success[0].value == f"Showing production traffic from the LiteLLM proxy, source “prod”: {n:,} requests."
    assert any("Production traffic from the LiteLLM proxy: source “prod”" in c.value for c in at.caption)
    [ttft] = [t.value for t in at.dataframe if "what" in t.value and (t.value["what"] == "TTFT users waited").any()]
    p95 = ttft.loc[ttft["percentile"] == "p95"].iloc[0]
    assert p95["value"] == f"{ttft_p95:,.0f}" and p95["n"] == n  # as the grid shows it
    charts = {c.proto.id for c in at.get("plotly_chart")}
    for key in ("logs_hist", "logs_prompt_hour", "logs_traffic", "logs_cold", "logs_ttft_hour"):
        assert any(key in c for c in charts), f"the {key} chart is drawn for a source"


# --- Prometheus -----------------------------------------------------------------------------------------------------

N_PROM = 40  # at least 20 in an hour (even split across two), so an hour's queue p95 can be handed over


@pytest.fixture(scope="module")
def scraped():
    """Prometheus' URL once it holds every one of N_PROM requests sent at once on two slots (a queue forms: the
    library test's set-up, tests/planner/sources/test_sources_prometheus.py), with the simulator's own queue log."""
    app = build_app(SimulatorConfig(prefill_tokens_per_s=2_000, slots=2, max_output_tokens=1, speedup=4, seed=7))
    with running_simulator(app=app) as base, running_prometheus([urlsplit(base).netloc]) as prom:

        def ask(i: int) -> int:  # distinct prompts: no prefix-cache hit shortens a prefill
            body = {"model": "sim-model", "max_tokens": 1, "messages": [{"role": "user", "content": f"w{i} " * 600}]}
            return httpx.post(f"{base}/chat/completions", json=body, timeout=60).status_code

        with ThreadPoolExecutor(N_PROM) as pool:
            assert set(pool.map(ask, range(N_PROM))) == {200}

        def all_scraped() -> bool:
            for name in ("vllm:time_to_first_token_seconds_count", "vllm:request_queue_time_seconds_count"):
                got = httpx.get(f"{prom}/api/v1/query", params={"query": f"sum({name})"}).json()["data"]["result"]
                if not got or float(got[0]["value"][1]) != N_PROM:
                    return False
            return True

        wait_for(all_scraped, timeout_s=120, what="Prometheus holding every request and queue wait")
        yield prom, [q for _, q in app.state.engine.metrics.queue_log]


def _read_prometheus(at: AppTest, url: str, model: str = "", hours: int | None = None) -> AppTest:
    at.text_input(key="sources_prom_url").input(url)
    at.text_input(key="sources_prom_model").input(model)
    if hours is not None:
        at.number_input(key="sources_prom_hours").set_value(hours)
    at.button(key="sources_prom_read").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _library_hours(prom: str, hours: int = 24, model: str | None = "sim-model"):
    """What the library reads for the page's inputs (the last `hours` hours), the hours with requests only."""
    import time

    now = int(time.time() * 1000)
    return [h for h in ttft_by_hour(prom, now - hours * HOUR_MS, now, model=model) if h.requests > 0]


def _hour_table(at: AppTest) -> pd.DataFrame:
    return next(shown_table(at, i) for i, t in enumerate(at.table) if "Queue p95" in t.value.columns)


def _plain(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def test_the_prometheus_section_shows_the_librarys_hours_and_p95s_and_keeps_its_inputs(scraped):
    prom, _ = scraped
    at = open_page("sources")
    assert at.text_input(key="sources_prom_url").value == "" and at.number_input(key="sources_prom_hours").value == 24
    _read_prometheus(at, prom, "sim-model")
    want = _library_hours(prom)
    assert sum(h.requests for h in want) == N_PROM

    table = _hour_table(at)
    assert list(table.columns) == ["Hour", "Requests", "TTFT p50", "TTFT p95", "Queue p95", "Mean waiting"]
    assert len(table) == len(want)
    fmt = lambda v: "—" if v is None else f"{v:,.0f} ms"  # noqa: E731
    for (_, row), h in zip(table.iterrows(), want, strict=True):
        # the viewer's zone is UTC in a test: the hour as the page shows every time
        assert row["Hour"] == f"{viewer_hour(h.hour_start_ms)} UTC"
        assert row["Requests"] == f"{h.requests:,.0f}"
        assert (row["TTFT p50"], row["TTFT p95"], row["Queue p95"]) == (
            fmt(h.p50_ms),
            fmt(h.p95_ms),
            fmt(h.queue_p95_ms),
        )
        assert h.queue_p95_ms is not None and h.queue_p95_ms > 0
    busiest = max(want, key=lambda h: (h.requests, h.hour_start_ms))
    summary = [_plain(m.value) for m in at.markdown if "busiest hour" in m.value]
    assert summary == [
        f"Production TTFT p95, busiest hour ({viewer_hour(busiest.hour_start_ms)} UTC): {fmt(busiest.p95_ms)} "
        f"({busiest.requests:,.0f} requests)."
    ]
    # kept in the session: another page and back keeps the inputs (and the hours read)
    at.switch_page("views/worksheet.py").run()
    at.switch_page("views/sources.py").run()
    assert at.text_input(key="sources_prom_url").value == prom
    assert at.text_input(key="sources_prom_model").value == "sim-model"
    assert len(_hour_table(at)) == len(want)
    # and bound to the address bar (the browser writes it): a link opens the same inputs
    linked = new_app()
    linked.query_params.update(
        {
            "sources_prom_url": prom,
            "sources_prom_profile": "sglang",
            "sources_prom_model": "m",
            "sources_prom_hours": "6",
        }
    )
    open_page("sources", linked)
    assert linked.text_input(key="sources_prom_url").value == prom
    assert linked.selectbox(key="sources_prom_profile").value == "sglang"
    assert linked.text_input(key="sources_prom_model").value == "m"
    assert linked.number_input(key="sources_prom_hours").value == 6


def viewer_hour(ms: int) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M")


def test_an_unknown_model_an_unreachable_server_and_a_bad_url_are_one_clear_sentence(scraped):
    prom, _ = scraped
    at = _read_prometheus(open_page("sources"), prom, "gpt-4o")
    [error] = at.error
    assert _plain(error.value) == (
        "Prometheus: no series of vllm:time_to_first_token_seconds has model_name='gpt-4o'; it has sim-model."
    )
    assert not [t for t in at.table if "Queue p95" in t.value.columns]
    assert not any(b.key == "sources_prom_use" for b in at.button)

    # nothing listens: one sentence, with the password the URL carries masked
    _read_prometheus(at, "http://reader:pa55w0rd@127.0.0.1:9", "")
    [error] = at.error
    assert "cannot be reached" in error.value and "pa55w0rd" not in error.value
    assert "\n" not in error.value and "Traceback" not in error.value
    _read_prometheus(at, "prometheus:9090")
    [error] = at.error
    assert _plain(error.value) == "Give Prometheus' URL with its scheme, such as `http://prometheus:9090`."


def test_the_hand_off_puts_the_largest_queue_p95_on_the_worksheet_with_its_provenance(scraped):
    prom, waits = scraped
    at = _read_prometheus(open_page("sources"), prom, "sim-model", hours=3)
    want = _library_hours(prom, hours=3)
    pick = max((h for h in want if h.requests >= 20), key=lambda h: (h.queue_p95_ms, h.requests))
    assert max(waits) > 0.3 and pick.queue_p95_ms > 300  # a real queue: 40 requests of ~0.3 simulated s on 2 slots
    hour = f"{viewer_hour(pick.hour_start_ms)} UTC"
    said = [_plain(c.value) for c in at.caption if "Hands the worksheet's queueing segment" in c.value]
    assert said and f"the queue p95 of {hour} ({pick.requests:,.0f} requests)" in said[0]
    assert f"{pick.queue_p95_ms:,.0f} ms" in said[0]
    at.button(key="sources_prom_use").click().run()
    assert not at.exception, [e.value for e in at.exception]

    # the Worksheet page, with the figure in its queueing field and where it came from under it
    assert at.title[0].value == "TTFT worksheet"
    assert at.number_input(key="queue_ms").value == pytest.approx(pick.queue_p95_ms)
    host = urlsplit(prom).netloc
    detail = f"production queue-time p95 from Prometheus {host}, vllm, model sim-model, hour {hour}"
    captions = [_plain(c.value) for c in at.caption]
    assert f":material/sensors: log · {detail} · n={pick.requests:.0f}" in captions, captions
    fig = at.session_state["ws_figures"]["queue_ms"]
    assert fig["source"] == str(Source.LOG) and fig["unit"] == "ms" and fig["n"] == pick.requests
    assert fig["value"] == pytest.approx(pick.queue_p95_ms) and fig["detail"] == detail
    assert float(at.query_params["queue_ms"]) == pytest.approx(pick.queue_p95_ms) and "queue_ms_from" in at.query_params


def test_an_hour_of_fewer_than_20_requests_is_not_handed_over(scraped, monkeypatch):
    from planner.sources.prometheus import HourTtft
    from ttft_planner_app.views.sources_sections import prometheus_read

    few = [HourTtft(0, 0.0, None, None, 0.0, None), HourTtft(HOUR_MS, 19.0, 120.0, 340.0, 1.5, 900.0)]
    monkeypatch.setattr(prometheus_read, "ttft_by_hour", lambda *a, **k: few)
    at = _read_prometheus(open_page("sources"), scraped[0])
    assert len(_hour_table(at)) == 1
    assert at.button(key="sources_prom_use").disabled
    assert any("no hour has 20 requests or more" in c.value for c in at.caption)


def test_with_sign_in_on_reading_prometheus_needs_the_source_sync_action(scraped, tmp_path, monkeypatch):
    from tests.app.test_auth import AUTH

    roles = tmp_path / "roles.toml"
    roles.write_text('default_role = "viewer"\n[roles]\neditor = ["dev@example.com"]\n')
    monkeypatch.setenv("TTFT_PLANNER_ROLES_FILE", str(roles))

    def signed_in(email: str) -> AppTest:
        at = new_app()
        at.secrets["auth"] = AUTH
        at.user = {"is_logged_in": True, "email": email, "email_verified": True}
        at.run()
        return open_page("sources", at)

    viewer = signed_in("pm@example.com")
    read = viewer.button(key="sources_prom_read")
    assert read.disabled and any("needs the editor role" in c.value for c in viewer.caption)
    viewer.text_input(key="sources_prom_url").input(scraped[0]).run()
    read = viewer.button(key="sources_prom_read")
    # a forged press (tests/app/test_auth.py's way): discarded on the server, nothing is read
    read.proto.disabled = False
    read.click().run()
    assert not viewer.exception
    assert "sources_prom" not in viewer.session_state and not viewer.table

    editor = _read_prometheus(signed_in("dev@example.com"), scraped[0], "sim-model")
    assert not editor.error and len(_hour_table(editor)) == len(_library_hours(scraped[0]))


def test_an_opentelemetry_source_is_added_on_the_page_and_offers_no_test_or_sync():
    at = open_page("sources")
    at.radio(key="sources_add_kind").set_value("OpenTelemetry spans (OTLP receiver)").run()
    _add_on_the_page(at, "agents", "OTLP_TOKEN_OF_THE_PAGE_TEST")
    assert any("Added agents" in s.value and "sources receive agents" in s.value for s in at.success)
    [src] = list_sources(open_store())
    assert (src.name, src.kind, src.secret_ref) == ("agents", SourceKind.OTLP, "OTLP_TOKEN_OF_THE_PAGE_TEST")
    assert at.button(key=f"sources_test_{src.id}").disabled and at.button(key=f"sources_sync_{src.id}").disabled
    assert "OpenTelemetry spans (OTLP receiver)" in _every_text(at)


# --- a stored Prometheus source, and every source's hours on its card -----------------------------------------------


def _add_prometheus_on_the_page(at: AppTest, name: str, url: str, model: str = "") -> AppTest:
    at.radio(key="sources_add_kind").set_value("Prometheus (engine histograms)").run()
    at.text_input(key="sources_add_name").input(name)
    at.text_input(key="sources_add_url").input(url)
    at.text_input(key="sources_add_model").input(model)
    _button(at, "Add source").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _card_hours(at: AppTest) -> pd.DataFrame:
    return next(shown_table(at, i) for i, t in enumerate(at.table) if "TTFT p95" in t.value.columns)


def test_a_prometheus_source_added_on_the_page_syncs_and_shows_the_stored_hours_and_hands_off_its_queue(scraped):
    from planner.store.source_hours import production_hours

    prom, _ = scraped
    at = open_page("sources")
    # a URL carrying a password is refused before anything is stored, and never echoed
    host = urlsplit(prom).netloc
    _add_prometheus_on_the_page(at, "engines", f"http://reader:pa55w0rd@{host}")
    assert at.error and "credentials" in at.error[0].value and list_sources(open_store()) == []
    assert "pa55w0rd" not in _every_text(at)

    _add_prometheus_on_the_page(at, "engines", prom, "sim-model")
    [src] = list_sources(open_store())
    assert (src.kind, src.url, src.profile, src.model_filter) == (SourceKind.PROMETHEUS, prom, "vllm", "sim-model")
    assert any("No production requests stored yet: Sync now reads its hours" in c.value for c in at.caption)

    at.button(key=f"sources_test_{src.id}").click().run()
    assert any("has vllm:time_to_first_token_seconds for sim-model" in s.value for s in at.success)
    at.button(key=f"sources_sync_{src.id}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    stored = production_hours(open_store(), src.id)
    assert sum(h.requests for h in stored) == N_PROM
    assert any(f"{N_PROM:,} requests in the hours kept" in s.value for s in at.success)

    # the card's hours are the stored ones, as the Prometheus section draws them
    table = _card_hours(at)
    assert list(table.columns) == ["Hour", "Requests", "TTFT p50", "TTFT p95", "Queue p95", "Mean waiting"]
    fmt = lambda v: "—" if v is None else f"{v:,.0f} ms"  # noqa: E731
    assert [(r["Hour"], r["Requests"], r["TTFT p95"], r["Queue p95"]) for _, r in table.iterrows()] == [
        (f"{viewer_hour(h.hour_start_ms)} UTC", f"{h.requests:,.0f}", fmt(h.p95_ms), fmt(h.queue_p95_ms))
        for h in stored
    ]
    assert prom in shown_table(at).iloc[0]["URL from"] and shown_table(at).iloc[0]["Requests kept"] == f"{N_PROM}"

    # the hand-off from the stored source, with the source named in the provenance
    pick = max((h for h in stored if h.requests >= 20), key=lambda h: (h.queue_p95_ms, h.requests))
    at.button(key=f"sources_use_{src.id}").click().run()
    assert at.title[0].value == "TTFT worksheet"
    assert at.number_input(key="queue_ms").value == pytest.approx(pick.queue_p95_ms)
    detail = at.session_state["ws_figures"]["queue_ms"]["detail"]
    assert detail.startswith(f"production queue-time p95 from Prometheus {host}, vllm, model sim-model, hour ")


@postgres
def test_a_synced_proxy_shows_its_production_ttft_per_hour_on_its_card(proxy_db, monkeypatch):
    _insert(proxy_db, _requests(120))
    monkeypatch.setenv(VAR, proxy_db)
    at = open_page("sources")
    _add_on_the_page(at, "prod", VAR)
    [src] = list_sources(open_store())
    at.button(key=f"sources_sync_{src.id}").click().run()
    table = _card_hours(at)
    # 120 requests a second apart from 09:00 UTC: one hour; TTFT of request i is 150 + i ms (nearest rank)
    assert list(table.columns) == ["Hour", "Requests", "TTFT p50", "TTFT p95"]
    assert table.to_dict("records") == [
        {"Hour": "2026-11-16 09:00 UTC", "Requests": "120", "TTFT p50": "209 ms", "TTFT p95": "263 ms"}
    ]
    assert not any(b.key == f"sources_use_{src.id}" for b in at.button)  # no queue figures to hand over


def test_an_unreachable_prometheus_source_says_so_with_its_url_and_the_token_masked(monkeypatch):
    monkeypatch.setenv("PROM_TOKEN_OF_THE_PAGE_TEST", "tok-3e2f")
    add_source(
        open_store(),
        "engines",
        SourceKind.PROMETHEUS,
        "PROM_TOKEN_OF_THE_PAGE_TEST",
        url="http://127.0.0.1:9",
        profile="vllm",
    )
    at = open_page("sources")
    [src] = list_sources(open_store())
    at.button(key=f"sources_sync_{src.id}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    [error] = [_plain(e.value).replace("`", "") for e in at.error]  # a URL is shown as inert code
    assert error.startswith("engines: Prometheus at http://127.0.0.1:9 cannot be reached") and "tok-3e2f" not in error
    assert error.endswith("what was read before is kept, and the next sync goes on")
    row = shown_table(at).iloc[0]
    shown = _plain(row["Last error"]).replace("`", "").replace("\u200b", "")  # inert code, break opportunities
    assert "http://127.0.0.1:9 cannot be reached" in shown and "the database in" not in shown
    assert "tok-3e2f" not in _every_text(at)


def test_an_opentelemetry_source_card_names_its_token_as_the_receiver_reads_it_and_its_newest_request(monkeypatch):
    """An OpenTelemetry source's token is read by the receiver (the worker, `sources receive`), not by the dashboard:
    its row never says "not set on this server"; and "Read up to" is its newest stored request, not "—" (it has no
    watermark: spans are pushed)."""
    monkeypatch.delenv("OTEL_TOKEN_OF_THE_CARD_TEST", raising=False)
    eng = open_store()
    source_id = add_source(eng, "spans", SourceKind.OTLP, "OTEL_TOKEN_OF_THE_CARD_TEST")
    t0 = 1_796_000_000_000  # 2026-11-30 00:53:20 UTC
    rows = [
        {
            "request_id": f"{i:032x}:{i:016x}",
            "ts_ms": t0 + i * 60_000,
            "model": "m",
            "api_base": "otlp",
            "prompt_tokens": 100,
            "cached_tokens": 0,
            "output_tokens": 10,
            "ttft_ms": 200.0 + i,
            "duration_ms": 900.0,
        }
        for i in range(30)
    ]
    store_batch(eng, source_id, rows, None)
    at = open_page("sources")
    assert not at.exception, [e.value for e in at.exception]
    row = shown_table(at).iloc[0]
    assert row["URL from"] == "$OTEL_TOKEN_OF_THE_CARD_TEST (read by the receiver)"
    assert row["Requests kept"] == "30" and row["Read up to"] == "2026-11-30 01:22 UTC"
