"""AppTest: the What-if page — pick a stored log, define candidates, see the table, the charts and the cheapest pick."""

import numpy as np
import pandas as pd

from planner.logs import COLUMNS, LogParseResult
from planner.store import database_url, open_store
from planner.store.logs import save_upload
from tests.app.conftest import chart_spec, new_app, open_page, plotly_array

DAY0_MS = 1_764_460_800_000  # 2025-11-30 00:00 UTC
CHEAP = "serverless:name=sls,window=3600,cold=20,slots=8,max=2,prefill=12000,decode=60,rtt=40,usd_per_mtok=0.3"
PRICEY = "dedicated:name=ded,replicas=2,slots=8,prefill=12000,decode=60,usd_per_gpu_h=3.2,rtt=40"
SLOW = "dedicated:name=slow,replicas=1,slots=8,prefill=1500,decode=60,usd_per_gpu_h=0.5,rtt=40"


def store_log() -> int:
    """A working day of traffic, 09:00–17:00 UTC, 60 requests an hour, prompts of 4000 tokens half cached."""
    rng = np.random.default_rng(1)
    ts = np.sort(DAY0_MS + rng.uniform(9, 17, 480) * 3_600_000).astype(np.int64)
    n = len(ts)
    frame = pd.DataFrame(
        {
            "ts_ms": ts,
            "model": ["m"] * n,
            "prompt_tokens": [4000] * n,
            "cached_tokens": [2000] * n,
            "output_tokens": [30] * n,
            "ttft_ms": [np.nan] * n,
            "duration_ms": [np.nan] * n,
            "source": ["team.jsonl"] * n,
        }
    )[list(COLUMNS)]
    eng = open_store(database_url())
    upload_id = save_upload(eng, "team.jsonl", LogParseResult(frame=frame))
    eng.dispose()
    return upload_id


def test_a_stored_log_and_two_candidates_give_a_table_charts_and_the_cheapest(app):
    upload_id = store_log()
    open_page("whatif", app)
    assert any("Upload a request log" in i.value for i in app.info)
    app.selectbox(key="wi_source").set_value(("stored", upload_id))
    app.text_area(key="wi_specs").set_value(f"{CHEAP}\n{PRICEY}\n{SLOW}").run()
    assert not app.exception
    table = app.dataframe[0].value
    assert table["Candidate"].tolist() == ["sls", "ded", "slow"]
    # 2000 uncached tokens at 12,000 tokens/s + 40 ms RTT ≈ 207 ms; at 1,500 tokens/s ≈ 1,373 ms: misses chat's 500 ms.
    assert table.set_index("Candidate")["Meets the target"].to_dict() == {"sls": "yes", "ded": "yes", "slow": "no"}
    assert table.loc[table["Cheapest meeting the target"] == "★", "Candidate"].tolist() == ["sls"]
    assert any("**sls**" in s.value for s in app.success)
    hourly = chart_spec(app, "wi_hourly")
    assert [t["name"] for t in hourly["data"]] == ["sls", "ded", "slow", "target 500 ms"]
    assert plotly_array(hourly["data"][0]["x"]) == list(range(9, 17))
    segments = chart_spec(app, "wi_segments")
    assert [t["name"] for t in segments["data"]] == ["Queueing", "Cold start", "Prefill", "Network"]
    prefill = dict(zip(segments["data"][2]["x"], plotly_array(segments["data"][2]["y"]), strict=True))
    assert round(prefill["slow"]) == 1333
    cost = chart_spec(app, "wi_cost")
    assert plotly_array(cost["data"][0]["marker"]["symbol"]) == ["star", "circle", "circle"]


def test_the_target_and_the_time_zone_change_the_verdict_and_the_hours(app):
    upload_id = store_log()
    open_page("whatif", app)
    app.selectbox(key="wi_source").set_value(("stored", upload_id))
    app.text_area(key="wi_specs").set_value(f"{CHEAP}\n{SLOW}")
    app.selectbox(key="wi_interaction").set_value("agent")
    app.selectbox(key="_viewer_tz_widget").set_value("Asia/Tokyo").run()
    table = app.dataframe[0].value
    # The agent loop's 1000 ms is still under 1,373 ms: slow misses; 09–17 UTC is 18–02 in Tokyo.
    assert table.set_index("Candidate")["Meets the target"].to_dict() == {"sls": "yes", "slow": "no"}
    assert plotly_array(chart_spec(app, "wi_hourly")["data"][0]["x"]) == [0, 1, 18, 19, 20, 21, 22, 23]


def test_bad_candidates_are_named_and_one_that_cannot_keep_up_says_so(app):
    upload_id = store_log()
    open_page("whatif", app)
    app.selectbox(key="wi_source").set_value(("stored", upload_id))
    app.text_area(key="wi_specs").set_value("serverless:window=300,cold=20,slots=eight,max=1,prefill=1,decode=1").run()
    assert any("slots must be a whole number, got 'eight'" in e.value for e in app.error)
    never = "dedicated:name=never,replicas=1,slots=1,prefill=20,decode=1,usd_per_gpu_h=0.1"
    app.text_area(key="wi_specs").set_value(f"{CHEAP}\n{never}").run()
    assert not app.exception
    assert any("**never** can never keep up" in e.value for e in app.error)
    table = app.dataframe[0].value
    assert table.set_index("Candidate")["Note"]["never"].startswith("can never keep up")


def test_targets_come_from_the_worksheet_custom_types_included(app):
    upload_id = store_log()
    app.run()
    app.number_input(key="target_ms").set_value(800).run()  # chat: 800 ms instead of the preset 500
    app.text_input(key="new_interaction_label").set_value("Review bot").run()
    app.number_input(key="new_interaction_target").set_value(1200).run()
    app.button(key="add_interaction").click().run()
    app.number_input(key="network_ms").set_value(25).run()
    open_page("whatif", app)
    target = app.selectbox(key="wi_interaction")
    assert target.value == "custom-review-bot"  # the worksheet's interaction in force
    assert (
        "Review bot · p95 ≤ 1,200 ms" in target.options
        and "Chat panel / single-file edit · p95 ≤ 800 ms" in target.options
    )
    # the worksheet's network segment fills the RTT a candidate leaves out
    assert any("rtt = 25 ms (entered by hand)" in c.value for c in app.caption)
    app.selectbox(key="wi_source").set_value(("stored", upload_id))
    app.text_area(key="wi_specs").set_value(f"{CHEAP}\n{SLOW}").run()
    # slow's ≈1,373 ms misses 1,200 ms; sls meets it
    assert any("Review bot target (p95 ≤ 1,200 ms at every hour): **sls**" in s.value for s in app.success)
    table = app.dataframe[0].value
    assert "Requests within the Review bot target" in table.columns
    app.selectbox(key="wi_interaction").set_value("chat").run()
    assert any("p95 ≤ 800 ms" in s.value for s in app.success)


def test_the_table_has_labels_not_internal_names(app):
    import re

    upload_id = store_log()
    open_page("whatif", app)
    app.selectbox(key="wi_source").set_value(("stored", upload_id))
    app.text_area(key="wi_specs").set_value(f"{CHEAP}\n{SLOW}").run()
    table = app.dataframe[0].value
    assert not [c for c in table.columns if re.fullmatch(r"[a-z0-9]+(_[a-z0-9]+)+", c)]
    text = table.to_string()
    assert "nan" not in text.split() and "None" not in text
    assert all(v.endswith(" ms") for v in table["TTFT p95"])


def test_a_link_reproduces_the_log_the_candidates_and_the_growth():
    store_log()
    at = new_app()
    at.query_params.update(
        {"wi_source": "stored: team.jsonl (480 requests)", "wi_specs": f"{CHEAP}\n{SLOW}", "wi_growth": "2"}
    )
    open_page("whatif", at)
    assert at.number_input(key="wi_growth").value == 2
    assert at.dataframe[0].value["Candidate"].tolist() == ["sls", "slow"]
    assert any("960 requests from team.jsonl" in c.value for c in at.caption)  # 480 × growth 2


def test_a_gzipped_upload_replays_like_the_cli_on_the_same_file(app, tmp_path):
    import gzip
    import json
    from pathlib import Path

    from click.testing import CliRunner

    from planner.cli import cli

    sample = Path(__file__).resolve().parents[2] / "assets" / "sample_logs" / "openai_chat_completions.jsonl"
    data = gzip.compress(sample.read_bytes())
    (tmp_path / "agent.jsonl.gz").write_bytes(data)
    r = CliRunner().invoke(cli, ["whatif", "--log", str(tmp_path / "agent.jsonl.gz"), "--deployment", PRICEY, "--json"])
    assert r.exit_code == 0, r.output
    want = json.loads(r.stdout)
    open_page("whatif", app)
    app.file_uploader(key="wi_files").set_value([("agent.jsonl.gz", data, "application/gzip")])
    app.text_area(key="wi_specs").set_value(PRICEY).run()
    assert not app.exception, app.exception
    assert any(f"{want['n_requests']:,} requests from agent.jsonl.gz" in c.value for c in app.caption)
    cost = chart_spec(app, "wi_cost")
    assert plotly_array(cost["data"][0]["x"]) == [want["candidates"][0]["p95_ms"]]


def test_the_starting_candidates_replay_at_the_worksheets_measured_prefill_rate(app):
    from planner.budget import Worksheet
    from planner.interactions import interactions
    from planner.provenance import Figure, Source
    from planner.worksheet_url import query_dict

    upload_id = store_log()
    measured = Figure(4000.0, "tokens/s", Source.PROBE, detail="acme: prefill slope fit", n=12)
    sheet = Worksheet(prefill_tokens_per_s=measured, network_ms=Figure.typed(30, "ms"))
    app.query_params.update(query_dict(sheet, {i.key for i in interactions()}))
    app.run()  # the worksheet, seeded from its shared link
    open_page("whatif", app)
    app.selectbox(key="wi_source").set_value(("stored", upload_id)).run()
    caption = next(c.value for c in app.caption if "From your worksheet" in c.value)
    assert "prefill = 4,000 tokens/s (probe" in caption and "for serverless 4×8, dedicated 1×8" in caption
    # 2,000 uncached tokens at the measured 4,000 tokens/s: 500 ms of prefill for every candidate, not 12,000's 167
    segments = chart_spec(app, "wi_segments")
    prefill = plotly_array(segments["data"][2]["y"])
    assert [round(v) for v in prefill] == [500, 500]
    app.text_area(key="wi_specs").set_value(f"{CHEAP}\n{SLOW}").run()  # both set their own rate and RTT
    assert not any("From your worksheet" in c.value and "prefill" in c.value for c in app.caption)


def test_a_log_without_the_needed_columns_points_to_the_logs_pages_mapping_box(app):
    """Issue 28: no command-line flag on a page; this page has no mapping box, so it names the Logs page's."""
    open_page("whatif", app)
    app.file_uploader(key="wi_files").set_value(
        [("odd.csv", b"timestamp,tok_a\n2026-11-20T09:00:00Z,10\n", "text/csv")]
    )
    app.run()
    assert not app.exception, app.exception
    [error] = [e.value for e in app.error]
    assert "no prompt-token column" in error and "Column mapping box on the Logs page" in error
    assert "--map" not in error
