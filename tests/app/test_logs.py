"""AppTest: the Logs view — an upload, rejected lines, the mapping form, the worksheet hand-off, stored uploads."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

from planner.store import open_store
from planner.store.logs import list_uploads
from tests.app.conftest import chart_spec, open_page

SAMPLES = Path(__file__).resolve().parents[2] / "assets" / "sample_logs"


def _upload(at: AppTest, *files: tuple[str, bytes]) -> AppTest:
    at.file_uploader(key="logs_files").set_value([(name, data, "application/octet-stream") for name, data in files])
    at.run()
    assert not at.exception, at.exception
    return at


def _working_day_p95(lines: list[dict], tz: str = "UTC") -> int:
    # independent: the working day in the viewer's zone, Mon–Fri 09:00–18:00, nearest rank
    import datetime as dt
    from zoneinfo import ZoneInfo

    vals = sorted(
        r["usage"]["prompt_tokens"]
        for r in lines
        if (t := dt.datetime.fromtimestamp(r["created"], ZoneInfo(tz))).weekday() < 5 and 9 <= t.hour < 18
    )
    return int(np.percentile(vals, 95, method="inverted_cdf"))


def test_upload_shows_percentiles_rejects_and_charts():
    data = (SAMPLES / "openai_chat_completions.jsonl").read_bytes()
    lines = [json.loads(x) for x in data.decode().splitlines()]
    broken = data + b'{"object": "chat.completion", "created": 17\n'
    at = _upload(open_page("logs"), ("agent.jsonl", broken))
    assert "Read 400 requests (agent.jsonl → openai_chat)" in at.success[0].value
    assert any(e.label.startswith("1 line rejected") for e in at.expander)
    assert at.metric[0].label == "p95 prompt tokens (working day)"
    assert at.metric[0].value == f"{_working_day_p95(lines):,}"
    assert len(at.get("plotly_chart")) >= 6  # histogram, ECDF, by hour, traffic, weekday, cold curve


def test_custom_columns_get_a_mapping_form():
    at = _upload(open_page("logs"), ("gw.csv", (SAMPLES / "gateway_custom_columns.csv").read_bytes()))
    assert at.error[0].value.startswith("Nothing could be read: gw.csv: no prompt-token column")
    at.selectbox(key="logs_map_ts").set_value("started")
    at.selectbox(key="logs_map_prompt_tokens").set_value("tok_in_total")
    at.selectbox(key="logs_map_cached_tokens").set_value("tok_in_hit")
    at.button[[b.label for b in at.button].index("Apply mapping")].click().run()
    assert not at.exception, at.exception
    assert not at.error
    assert "Read 200 requests" in at.success[0].value


def test_use_in_worksheet_fills_p95_prompt_and_cache_hit_with_provenance():
    at = open_page("logs")
    at.button(key="logs_load_sample").click().run()  # the default sample: OpenAI chat completions
    p95 = float(at.metric[0].value.replace(",", ""))
    at.button(key="logs_use").click().run()
    assert not at.exception, at.exception
    figs = at.session_state["ws_figures"]
    assert figs["prompt_tokens_p95"]["value"] == p95 and figs["prompt_tokens_p95"]["source"] == "log"
    assert figs["prompt_tokens_p95"]["n"] > 20 and "working day" in figs["prompt_tokens_p95"]["window"]
    assert 0.5 < figs["cache_hit_fraction"]["value"] < 1.0 and figs["cache_hit_fraction"]["unit"] == "fraction"


def test_save_open_and_delete_a_stored_upload(tmp_path):
    at = _upload(open_page("logs"), ("spend.json", (SAMPLES / "litellm_spend_logs.json").read_bytes()))
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
    at = _upload(open_page("logs"), ("lf.json", (SAMPLES / "langfuse_observations.json").read_bytes()))
    tables = [t.value for t in at.dataframe if "what" in t.value and (t.value["what"] == "TTFT users waited").any()]
    assert tables, "the TTFT table is shown for logs with completionStartTime"
    df = tables[0]
    assert (df["n"] == 250).all() and set(df["percentile"]) >= {"p50", "p95"}
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert any("what users waited" in t for t in titles)


def test_the_upload_and_its_settings_survive_leaving_the_page():
    at = _upload(open_page("logs"), ("gw.csv", (SAMPLES / "gateway_custom_columns.csv").read_bytes()))
    at.selectbox(key="logs_map_prompt_tokens").set_value("tok_in_total")
    at.button[[b.label for b in at.button].index("Apply mapping")].click().run()
    at.selectbox(key="logs_naive_tz").set_value("UTC")
    at.text_input(key="logs_workday").set_value("08:00-17:00").run()
    assert "Read 200 requests" in at.success[0].value
    at.switch_page("views/worksheet.py").run()
    at.switch_page("views/logs.py").run()
    assert not at.exception, at.exception
    assert "Read 200 requests" in at.success[0].value  # still there, without uploading again
    assert at.text_input(key="logs_workday").value == "08:00-17:00"
    assert any("Showing your last upload: gw.csv" in c.value for c in at.caption)


def test_a_mapping_made_for_one_file_does_not_carry_over_to_the_next():
    at = _upload(open_page("logs"), ("gw.csv", (SAMPLES / "gateway_custom_columns.csv").read_bytes()))
    at.selectbox(key="logs_map_prompt_tokens").set_value("tok_in_total")
    at.button[[b.label for b in at.button].index("Apply mapping")].click().run()
    assert "Read 200 requests" in at.success[0].value
    # The next file has standard columns: it is read by its own detected columns, not gw.csv's mapping.
    at = _upload(at, ("std.csv", (SAMPLES / "requests.csv").read_bytes()))
    assert not at.error, [e.value for e in at.error]
    assert "Read 400 requests" in at.success[0].value


def test_the_mapping_form_is_prefilled_with_its_guess_and_says_so():
    at = _upload(open_page("logs"), ("odd.csv", b"timestamp,tok_a,tok_b\n2026-11-20T09:00:00Z,10,2\n"))
    assert at.error[0].value.startswith("Nothing could be read: odd.csv: no prompt-token column")
    assert at.selectbox(key="logs_map_ts").value == "timestamp"
    assert any("Guessed from the column names: Arrival time ← timestamp" in c.value for c in at.caption)


def test_hours_follow_the_viewer_time_zone_and_percentile_labels_do_not_overprint():
    data = (SAMPLES / "openai_chat_completions.jsonl").read_bytes()
    lines = [json.loads(x) for x in data.decode().splitlines()]
    at = open_page("logs")
    at.sidebar.selectbox(key="_viewer_tz_widget").set_value("Asia/Tokyo").run()
    at = _upload(at, ("agent.jsonl", data))
    assert at.metric[0].value == f"{_working_day_p95(lines, 'Asia/Tokyo'):,}"
    assert "Asia/Tokyo" in chart_spec(at, "logs_traffic")["layout"]["xaxis"]["title"]["text"]
    notes = chart_spec(at, "logs_hist")["layout"]["annotations"]
    p50, p95 = (next(a for a in notes if a["text"].startswith(k)) for k in ("p50", "p95"))
    assert (p50["y"], p50["xanchor"]) != (p95["y"], p95["xanchor"])  # different heights and sides
    assert p95["text"].startswith("p95 (whole log)")  # not to be read as the headline's working-day p95


def test_a_public_trace_sample_says_its_times_are_placed_from_a_default_start():
    at = open_page("logs")
    at.selectbox(key="logs_sample").set_value("burstgpt_synthetic.csv")
    at.button(key="logs_load_sample").click().run()
    assert not at.exception, at.exception
    assert "Read 300 requests (burstgpt_synthetic.csv → burstgpt)" in at.success[0].value
    assert any("2024-01-01" in i.value and "default" in i.value for i in at.info)


def test_a_gzipped_upload_is_spooled_to_disk_and_gives_the_cli_percentiles_on_the_same_file(tmp_path):
    import gzip

    from click.testing import CliRunner

    from planner.cli import cli

    data = gzip.compress((SAMPLES / "openai_chat_completions.jsonl").read_bytes())
    (tmp_path / "agent.jsonl.gz").write_bytes(data)
    r = CliRunner().invoke(cli, ["logs", "summarize", str(tmp_path / "agent.jsonl.gz"), "--json"])
    assert r.exit_code == 0, r.output
    want = json.loads(r.stdout)
    at = _upload(open_page("logs"), ("agent.jsonl.gz", data))
    assert "Read 400 requests (agent.jsonl.gz → openai_chat)" in at.success[0].value
    assert at.metric[0].value == f"{want['prompt_tokens_workday']['p95']['value']:,.0f}"
    assert at.metric[1].value == f"{want['prompt_tokens_workday']['p50']['value']:,.0f}"
    assert at.metric[2].value == f"{want['cached_share']['token_fraction']:.0%}"
    spool = at.session_state["logs_spool"]  # the upload lives on disk, not as bytes in the session
    assert spool.paths[0].read_bytes() == data
    at.switch_page("views/worksheet.py").run()
    at.switch_page("views/logs.py").run()
    at.button(key="logs_clear").click().run()
    assert not at.exception, at.exception
    assert not spool.folder.exists()  # cleared: the temporary copy is gone too


def _night_trace_csv(n: int = 60) -> tuple[bytes, list[int]]:
    """An Azure-layout trace (no cache column) whose requests all fall at 02:00 UTC on a Wednesday."""
    tokens = [100 + 37 * i % 900 for i in range(n)]
    rows = [f"2023-11-15 02:{i // 60:02d}:{i % 60:02d}.000,{t},10" for i, t in enumerate(tokens)]
    return ("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "\n".join(rows) + "\n").encode(), tokens


def test_a_log_outside_the_working_day_is_read_whole_and_says_so():
    data, tokens = _night_trace_csv()
    at = _upload(open_page("logs"), ("night.csv", data))
    assert any("None of the 60 requests falls in the working day" in i.value for i in at.info)
    assert at.metric[0].label == "p95 prompt tokens (whole log)"
    assert at.metric[0].value == f"{int(np.percentile(tokens, 95, method='inverted_cdf')):,}"
    at.button(key="logs_use").click().run()
    assert not at.exception, at.exception
    fig = at.session_state["ws_figures"]["prompt_tokens_p95"]
    assert fig["n"] == 60 and "whole log" in fig["window"]


def test_a_log_without_cache_figures_hands_over_no_cache_hit_rate():
    data, _ = _night_trace_csv()
    at = _upload(open_page("logs"), ("night.csv", data))
    assert at.metric[2].value == "—"
    before = at.session_state["ws_figures"]["cache_hit_fraction"] if "ws_figures" in at.session_state else None
    at.button(key="logs_use").click().run()
    assert not at.exception, at.exception
    figs = at.session_state["ws_figures"]
    assert figs["prompt_tokens_p95"]["source"] == "log"
    assert figs["cache_hit_fraction"]["source"] != "log"  # the worksheet keeps its own figure
    if before is not None:
        assert figs["cache_hit_fraction"] == before


def test_a_dot_log_file_is_accepted_and_read_by_its_content():
    from planner.logs import UPLOAD_EXTENSIONS

    assert "log" in UPLOAD_EXTENSIONS  # the uploader's type filter: gateways name JSON-lines files *.log
    at = _upload(open_page("logs"), ("gateway.log", (SAMPLES / "openai_chat_completions.jsonl").read_bytes()))
    assert "Read 400 requests (gateway.log → openai_chat)" in at.success[0].value


def test_the_mapping_form_names_fields_in_words():
    from planner.logs.mapped import FIELD_LABELS, FIELDS

    assert set(FIELD_LABELS) == set(FIELDS)  # every field has its words
    at = _upload(open_page("logs"), ("gw.csv", (SAMPLES / "gateway_custom_columns.csv").read_bytes()))
    labels = [at.selectbox(key=f"logs_map_{f}").label for f in FIELDS]
    assert labels[0] == "Arrival time" and "TTFT (ms)" in labels
    assert not [lab for lab in labels if "_" in lab]  # no ts_relative_s, prompt_tokens_uncached, ttft_ms


def test_a_missing_column_is_named_in_the_pages_words_and_the_cli_keeps_its_flag(tmp_path):
    """Issue 28: the page tells a browser user to choose the column in its mapping box, never "--map FIELD=COLUMN";
    the command line, reading the same file, keeps its flag."""
    from click.testing import CliRunner

    from planner.cli import cli

    odd = b"timestamp,tok_a,tok_b\n2026-11-20T09:00:00Z,10,2\n"
    at = _upload(open_page("logs"), ("odd.csv", odd))
    [error] = [e.value for e in at.error]
    assert "no prompt-token column" in error and "choose it in the Column mapping box below" in error
    assert "--map" not in error and "FIELD=COLUMN" not in error
    assert any(e.label == "Column mapping" for e in at.expander)  # the box the message points to is there
    (tmp_path / "odd.csv").write_bytes(odd)
    r = CliRunner().invoke(cli, ["logs", "summarize", str(tmp_path / "odd.csv")])
    assert r.exit_code == 2 and "no prompt-token column" in r.output
    assert "map it with --map FIELD=COLUMN" in r.output and "Column mapping box" not in r.output


def _gateway_rows(start: int, stop: int) -> bytes:
    lines = (SAMPLES / "gateway_custom_columns.csv").read_bytes().splitlines(keepends=True)
    return b"".join([lines[0], *lines[1 + start : 1 + stop]])


def test_adding_a_second_file_keeps_the_mapping_chosen_for_the_first():
    """Issue 28: a mapping chosen for one upload stays when a second file with the same columns joins it."""
    first, second = ("gw-monday.csv", _gateway_rows(0, 120)), ("gw-tuesday.csv", _gateway_rows(120, 200))
    at = _upload(open_page("logs"), first)
    at.selectbox(key="logs_map_ts").set_value("started")
    at.selectbox(key="logs_map_prompt_tokens").set_value("tok_in_total")
    at.selectbox(key="logs_map_cached_tokens").set_value("tok_in_hit")
    at.button[[b.label for b in at.button].index("Apply mapping")].click().run()
    assert "Read 120 requests" in at.success[0].value
    at = _upload(at, first, second)  # the uploader now holds both
    assert not at.error, [e.value for e in at.error]
    assert "Read 200 requests" in at.success[0].value
    assert at.selectbox(key="logs_map_prompt_tokens").value == "tok_in_total"
    assert at.selectbox(key="logs_map_cached_tokens").value == "tok_in_hit"
    assert any("Kept the column mapping you chose for the previous upload" in i.value for i in at.info)
    # Still there on the next run, and a mapping chosen afresh replaces it (and its note).
    at.selectbox(key="logs_map_cached_tokens").set_value("")
    at.button[[b.label for b in at.button].index("Apply mapping")].click().run()
    assert not at.error and "Read 200 requests" in at.success[0].value
    assert not any("Kept the column mapping" in i.value for i in at.info)
    assert at.selectbox(key="logs_map_cached_tokens").value == ""
