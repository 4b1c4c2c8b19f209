"""AppTest: the Logs view — an upload, rejected lines, the mapping form, the worksheet hand-off, stored uploads."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

from planner.store import open_store
from planner.store.logs import list_uploads
from tests.app.conftest import ROUTER

SAMPLES = Path(__file__).resolve().parents[2] / "assets" / "sample_logs"


def _page() -> AppTest:
    at = AppTest.from_file(ROUTER, default_timeout=60)
    at.run()
    at.switch_page("views/logs.py").run()
    assert not at.exception, at.exception
    return at


def _upload(at: AppTest, *files: tuple[str, bytes]) -> AppTest:
    at.file_uploader(key="logs_files").set_value([(name, data, "application/octet-stream") for name, data in files])
    at.run()
    assert not at.exception, at.exception
    return at


def _working_day_p95(lines: list[dict]) -> int:
    # independent: Berlin-free UTC working day (default tz UTC), Mon–Fri 09:00–18:00, nearest rank
    import datetime as dt

    vals = sorted(r["usage"]["prompt_tokens"] for r in lines
                  if (t := dt.datetime.fromtimestamp(r["created"], dt.timezone.utc)).weekday() < 5 and 9 <= t.hour < 18)
    return int(np.percentile(vals, 95, method="inverted_cdf"))


def test_upload_shows_percentiles_rejects_and_charts():
    data = (SAMPLES / "openai_chat_completions.jsonl").read_bytes()
    lines = [json.loads(x) for x in data.decode().splitlines()]
    broken = data + b'{"object": "chat.completion", "created": 17\n'
    at = _upload(_page(), ("agent.jsonl", broken))
    assert "Read 400 requests (agent.jsonl → openai_chat)" in at.success[0].value
    assert any(e.label.startswith("1 line rejected") for e in at.expander)
    assert at.metric[0].label == "p95 prompt tokens (working day)"
    assert at.metric[0].value == f"{_working_day_p95(lines):,}"
    assert len(at.get("plotly_chart")) >= 6  # histogram, ECDF, by hour, traffic, weekday, cold curve


def test_custom_columns_get_a_mapping_form():
    at = _upload(_page(), ("gw.csv", (SAMPLES / "gateway_custom_columns.csv").read_bytes()))
    assert "no request could be read" in at.error[0].value
    at.selectbox(key="logs_map_ts").set_value("started")
    at.selectbox(key="logs_map_prompt_tokens").set_value("tok_in_total")
    at.selectbox(key="logs_map_cached_tokens").set_value("tok_in_hit")
    at.button[[b.label for b in at.button].index("Apply mapping")].click().run()
    assert not at.exception, at.exception
    assert not at.error
    assert "Read 200 requests" in at.success[0].value


def test_use_in_worksheet_fills_p95_prompt_and_cache_hit_with_provenance():
    at = _page()
    at.button(key="logs_load_sample").click().run()  # the default sample: OpenAI chat completions
    p95 = float(at.metric[0].value.replace(",", ""))
    at.button(key="logs_use").click().run()
    assert not at.exception, at.exception
    figs = at.session_state["ws_figures"]
    assert figs["prompt_tokens_p95"]["value"] == p95 and figs["prompt_tokens_p95"]["source"] == "log"
    assert figs["prompt_tokens_p95"]["n"] > 20 and "working day" in figs["prompt_tokens_p95"]["window"]
    assert 0.5 < figs["cache_hit_fraction"]["value"] < 1.0 and figs["cache_hit_fraction"]["unit"] == "fraction"


def test_save_open_and_delete_a_stored_upload(tmp_path):
    at = _upload(_page(), ("spend.json", (SAMPLES / "litellm_spend_logs.json").read_bytes()))
    at.button(key="logs_save").click().run()
    eng = open_store()
    [u] = list_uploads(eng)
    assert u.n_requests == 250
    at.file_uploader(key="logs_files").set_value(None).run()
    at.selectbox(key="logs_stored").set_value(u.id)
    at.button(key="logs_open_stored").click().run()
    assert not at.exception, at.exception
    assert "stored upload" in at.success[0].value and "250 requests" in at.success[0].value
    at.button(key=f"logs_delete_{u.id}").click().run()
    assert list_uploads(eng) == []


def test_production_ttft_tab_from_a_log_with_first_token_times():
    at = _upload(_page(), ("lf.json", (SAMPLES / "langfuse_observations.json").read_bytes()))
    tables = [t.value for t in at.dataframe if "what" in t.value and (t.value["what"] == "TTFT users waited").any()]
    assert tables, "the TTFT table is shown for logs with completionStartTime"
    df = tables[0]
    assert (df["n"] == 250).all() and set(df["percentile"]) >= {"p50", "p95"}
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert any("what users waited" in t for t in titles)
