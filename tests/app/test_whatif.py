"""AppTest: the What-if page — pick a stored log, define candidates, see the table, the charts and the cheapest pick."""

import math
import re

import numpy as np
import pandas as pd

from planner.logs import COLUMNS, LogParseResult
from planner.store import database_url, open_store
from planner.store.logs import save_upload
from tests.app.conftest import chart_spec, new_app, open_page, plotly_array, shown_table

DAY0_MS = 1_764_460_800_000  # 2025-11-30 00:00 UTC
CHEAP = "serverless:name=sls,window=3600,cold=20,slots=8,max=2,prefill=12000,decode=60,rtt=40,usd_per_mtok=0.3"
PRICEY = "dedicated:name=ded,replicas=2,slots=8,prefill=12000,decode=60,usd_per_gpu_h=3.2,rtt=40"
SLOW = "dedicated:name=slow,replicas=1,slots=8,prefill=1500,decode=60,usd_per_gpu_h=0.5,rtt=40"
# Run to run, the engine's speed varies by ±20 % (log-sd): the prediction interval comes from that spread.
SPREAD = "dedicated:name=spread,replicas=2,slots=8,prefill=12000,decode=60,usd_per_gpu_h=3.2,rtt=40,speed_sd=0.2"
# One slot, 4.9 s a request, a request a minute: the slowest 5% queue behind each other.
BUSY = "dedicated:name=busy,replicas=1,slots=1,prefill=1000,decode=10,usd_per_gpu_h=0.5,rtt=40,speed_sd=0.2"


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
    upload_id = save_upload(eng, "team.jsonl", LogParseResult(requests=frame))
    eng.dispose()
    return upload_id


def _replay_stored_log(app, specs: str) -> int:
    """Store the log (store_log), open the What-if page in `app` and replay it with `specs`; the upload's id."""
    upload_id = store_log()
    open_page("whatif", app)
    app.selectbox(key="wi_source").set_value(("stored", upload_id))
    app.text_area(key="wi_specs").set_value(specs).run()
    return upload_id


def test_a_stored_log_and_two_candidates_give_a_table_charts_and_the_cheapest(app):
    upload_id = store_log()
    open_page("whatif", app)
    assert any("Upload a request log" in i.value for i in app.info)
    app.selectbox(key="wi_source").set_value(("stored", upload_id))
    app.text_area(key="wi_specs").set_value(f"{CHEAP}\n{PRICEY}\n{SLOW}").run()
    assert not app.exception
    table = shown_table(app)
    assert table["Candidate"].tolist() == ["sls", "ded", "slow"]
    # 2000 uncached tokens at 12,000 tokens/s + 40 ms RTT ≈ 207 ms; at 1,500 tokens/s ≈ 1,373 ms: misses chat's 500 ms.
    assert table.set_index("Candidate")["Meets the target"].to_dict() == {"sls": "yes", "ded": "yes", "slow": "no"}
    assert table.loc[table["Cheapest meeting the target"] == "★", "Candidate"].tolist() == ["sls"]
    assert any("**sls**" in s.value for s in app.success)
    hourly = chart_spec(app, "wi_hourly")
    lines = [t for t in hourly["data"] if "fill" not in t]  # each candidate's interval is a shaded band besides
    assert [t["name"] for t in lines] == ["sls", "ded", "slow", "target 500 ms"]
    assert plotly_array(lines[0]["x"]) == list(range(9, 17))
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
    table = shown_table(app)
    # The agent loop's 1000 ms is still under 1,373 ms: slow misses; 09–17 UTC is 18–02 in Tokyo.
    assert table.set_index("Candidate")["Meets the target"].to_dict() == {"sls": "yes", "slow": "no"}
    line = next(t for t in chart_spec(app, "wi_hourly")["data"] if t["name"] == "sls")
    assert plotly_array(line["x"]) == [0, 1, 18, 19, 20, 21, 22, 23]


def test_bad_candidates_are_named_and_one_that_cannot_keep_up_says_so(app):
    _replay_stored_log(app, "serverless:window=300,cold=20,slots=eight,max=1,prefill=1,decode=1")
    assert any("slots must be a whole number, got 'eight'" in e.value for e in app.error)
    never = "dedicated:name=never,replicas=1,slots=1,prefill=20,decode=1,usd_per_gpu_h=0.1"
    app.text_area(key="wi_specs").set_value(f"{CHEAP}\n{never}").run()
    assert not app.exception
    assert any("**never** can never keep up" in e.value for e in app.error)
    table = shown_table(app)
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
    table = shown_table(app)
    assert "Requests within the Review bot target" in table.columns
    app.selectbox(key="wi_interaction").set_value("chat").run()
    assert any("p95 ≤ 800 ms" in s.value for s in app.success)


def test_the_table_has_labels_not_internal_names(app):
    _replay_stored_log(app, f"{CHEAP}\n{SLOW}")
    table = shown_table(app)
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
    assert shown_table(at)["Candidate"].tolist() == ["sls", "slow"]
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
    from planner.worksheet.budget import Worksheet
    from planner.worksheet.interactions import interactions
    from planner.worksheet.provenance import Figure, Source
    from planner.worksheet.url import query_dict

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


def _replayed(upload_id: int, specs: list[str]):
    """What the page replays: the stored log and these candidates (they set every rate; the chat target)."""
    from planner.store.logs import load_upload_frame
    from planner.whatif.deployment import parse_deployment
    from planner.whatif.results import compare
    from planner.whatif.trace import trace_from_frame

    eng = open_store(database_url())
    try:
        trace = trace_from_frame(load_upload_frame(eng, upload_id), source="team.jsonl")
    finally:
        eng.dispose()
    return {c.name: c for c in compare(trace, [parse_deployment(s) for s in specs], "chat").candidates}


def test_a_measured_speed_spread_gives_each_p95_an_interval_in_words_in_the_table_and_as_a_band(app):
    upload_id = _replay_stored_log(app, f"{CHEAP}\n{SPREAD}")
    assert not app.exception, app.exception
    band = _replayed(upload_id, [CHEAP, SPREAD])["spread"].interval["p95"]
    assert band.lo_ms < band.value_ms < band.hi_ms  # ±20 % speed: a real interval around the prediction
    # the sentence under the verdict quotes it, and says the engine's speed spread sets its width
    [sentence] = [c.value for c in app.caption if c.value.startswith("**spread**")]
    assert f"p95 {band.value_ms:,.0f} ms (80% interval {band.lo_ms:,.0f} ms – {band.hi_ms:,.0f} ms)" in sentence
    assert "engine's speed spread" in sentence
    # sls was typed without a spread: its interval only covers the trace's size, said once, with how to measure one
    [hint] = [c.value for c in app.caption if "only covers the trace's size" in c.value]
    assert hint.startswith("sls has no speed spread (")  # sls alone: the candidate with a spread is not named
    assert "`ttft-planner calibrate` prints speed_sd/request_sd" in hint
    # the table shows the interval as one range
    table = shown_table(app).set_index("Candidate")
    assert table.loc["spread", "TTFT p95, 80% interval"] == f"{band.lo_ms:,.0f}–{band.hi_ms:,.0f} ms"
    # the chart: a band in the line's colour, grouped with it, its top above the line and its bottom below, each hour
    data = chart_spec(app, "wi_hourly")["data"]
    line = next(t for t in data if t["name"] == "spread")
    shade = next(t for t in data if t.get("fill") == "toself" and t.get("legendgroup") == "spread")
    assert shade["line"]["color"] == line["line"]["color"] and shade["showlegend"] is False
    hours, p95 = plotly_array(line["x"]), plotly_array(line["y"])
    ys = plotly_array(shade["y"])
    tops, bottoms = ys[: len(hours)], ys[len(hours) :][::-1]
    assert plotly_array(shade["x"])[: len(hours)] == hours
    assert all(lo < y < hi for lo, y, hi in zip(bottoms, p95, tops, strict=True)), (bottoms, p95, tops)
    assert "80% interval" in shade["text"][0]
    # the expander states the serving model each candidate assumes, and its speed spread
    said = [c.value for c in app.caption if c.value.startswith("Serving model")]
    assert said == [
        "Serving model: 0–2 replicas × 8 slots, started on demand (cold start 20 s), released after 3,600 s idle; "
        "first in first out across the pool, each slot at the full prefill/decode rate · fixed speed (no speed_sd or "
        "request_sd in its spec).",
        "Serving model: 2 replicas × 8 slots, always warm; first in first out across the pool, each slot at the full "
        "prefill/decode rate · speed ±20% run to run.",
    ]


def test_a_candidates_predicted_queueing_goes_to_the_worksheet_with_its_interval(app):
    upload_id = _replay_stored_log(app, f"{CHEAP}\n{BUSY}")
    assert not app.exception, app.exception
    want = _replayed(upload_id, [CHEAP, BUSY])
    # the cheapest candidate meeting the target is offered first: a serverless pool, so its cold start goes too
    assert app.selectbox(key="wi_use_pick").value == "sls"
    assert want["sls"].cold_starts > 0
    app.button(key="wi_use").click().run()
    assert not app.exception, app.exception
    figs = app.session_state["ws_figures"]
    # the segments of the replayed p95 request (they add up to the p95), rounded down to 0.1 ms (issue 45): here
    # the p95 request found a warm replica, so its cold start is 0 however long the colder tail waited
    sls = want["sls"]
    assert figs["cold_ms"]["value"] == math.floor(sls.p95_segments_ms["cold_ms"] * 10) / 10
    assert figs["queue_ms"]["value"] + figs["cold_ms"]["value"] <= sls.overall["p95"].value
    assert figs["cold_ms"]["source"] == "model" and figs["cold_ms"]["n"] == 480
    # the one-slot candidate: its slowest 5% queue for seconds; that wait becomes the worksheet's queueing segment
    app.switch_page("views/whatif.py").run()
    app.selectbox(key="wi_use_pick").set_value("busy").run()
    assert "busy's predicted queueing" in app.button(key="wi_use").label
    app.button(key="wi_use").click().run()
    assert not app.exception, app.exception
    busy = want["busy"]
    queue = app.session_state["ws_figures"]["queue_ms"]
    assert queue["value"] == math.floor(busy.p95_segments_ms["queue_ms"] * 10) / 10 > 1_000
    assert app.number_input(key="queue_ms").value == queue["value"]  # on the worksheet now
    # its provenance, as the worksheet shows it, quotes the p95 and its interval
    band = busy.interval["p95"]
    interval = f"p95 {band.value_ms:,.0f} ms (80%: {band.lo_ms:,.0f}–{band.hi_ms:,.0f} ms)"
    [shown] = [c.value.replace("\\", "") for c in app.caption if "what-if replay of busy" in c.value]
    assert shown.startswith(
        ":material/sensors: model · what-if replay of busy on team.jsonl: the p95 request's segment; " + interval
    )
    assert "n=480" in shown and "2025-11-30 09:" in shown


def store_source_and_upload(name: str = "prod") -> tuple[int, int]:
    """The working day of `store_log`'s shape twice: as a production source's requests (store_batch, as a sync stores
    them) and, read back as the Logs page reads a source, saved as a stored upload. Returns (source id, upload id)."""
    from planner.store.sources import SourceKind, add_source, load_source_frame, store_batch

    rng = np.random.default_rng(2)
    ts = np.sort(DAY0_MS + rng.uniform(9, 17, 480) * 3_600_000).astype(np.int64)
    rows = [
        {
            "request_id": f"r{i}",
            "ts_ms": int(t),
            "model": "m",
            "api_base": "http://vllm:8000",
            "prompt_tokens": 4000 + 10 * (i % 7),
            "cached_tokens": 2000,
            "output_tokens": 30,
            "ttft_ms": 200.0 + i % 13,
            "duration_ms": 900.0,
        }
        for i, t in enumerate(ts)
    ]
    eng = open_store(database_url())
    try:
        source_id = add_source(eng, name, SourceKind.OTLP, "OTLP_TOKEN")
        assert store_batch(eng, source_id, rows, (int(ts[-1]), f"r{len(ts) - 1}")) == 480
        frame = load_source_frame(eng, source_id)
        upload_id = save_upload(eng, "same.jsonl", LogParseResult(requests=frame))
    finally:
        eng.dispose()
    return source_id, upload_id


def _page_figures(at) -> dict:
    """What the page shows of a replay: the table, the hourly p95 curves and the segments."""
    return {
        "table": shown_table(at).to_dict("list"),
        "hourly": [
            (t["name"], plotly_array(t["x"]), plotly_array(t["y"])) for t in chart_spec(at, "wi_hourly")["data"]
        ],
        "segments": [(t["name"], plotly_array(t["y"])) for t in chart_spec(at, "wi_segments")["data"]],
        "success": [s.value for s in at.success],
    }


def test_a_production_source_is_picked_and_replayed_as_the_same_rows_stored_as_an_upload(app):
    """Issue 32: a source's requests replay exactly as a stored upload holding the same rows; the results name it."""
    from planner.store.sources import SourceKind, add_source

    source_id, upload_id = store_source_and_upload()
    eng = open_store(database_url())
    add_source(eng, "idle", SourceKind.OTLP, "OTLP_TOKEN")  # no requests yet: nothing to replay, not offered
    eng.dispose()
    open_page("whatif", app)
    picker = app.selectbox(key="wi_source")
    assert "production: prod (OpenTelemetry)" in picker.options
    assert "stored: same.jsonl (480 requests)" in picker.options
    assert not any("idle" in o for o in picker.options)
    app.selectbox(key="wi_source").set_value(("stored", upload_id))
    app.text_area(key="wi_specs").set_value(f"{CHEAP}\n{PRICEY}\n{SLOW}").run()
    assert not app.exception, app.exception
    from_upload = _page_figures(app)
    app.selectbox(key="wi_source").set_value(("source", source_id)).run()
    assert not app.exception, app.exception
    from_source = _page_figures(app)
    assert from_source == from_upload
    assert from_source["table"]["Candidate"] == ["sls", "ded", "slow"]
    captions = [c.value for c in app.caption]
    assert any(
        c.startswith("Replayed: production traffic from OpenTelemetry spans, source “prod”, 480 requests over")
        for c in captions
    ), captions
    assert any("Production traffic from OpenTelemetry spans: source “prod”, 480 requests up to" in c for c in captions)
    # the worksheet hand-off names the source in its provenance
    app.button(key="wi_use").click().run()
    detail = app.session_state["ws_figures"]["queue_ms"]["detail"]
    assert "on production traffic from OpenTelemetry spans, source “prod”" in detail


def test_a_link_to_a_source_reopens_it_never_the_upload_of_the_same_id_and_outlives_a_sync():
    from planner.store.sources import store_batch

    source_id, upload_id = store_source_and_upload()
    assert source_id == upload_id == 1  # the same number: the link must still tell them apart
    at = new_app()
    at.query_params.update({"wi_source": "production: prod (OpenTelemetry)", "wi_specs": CHEAP})
    open_page("whatif", at)
    assert at.selectbox(key="wi_source").value == ("source", source_id)
    assert any(c.value.startswith("Replayed: production traffic from OpenTelemetry spans") for c in at.caption)
    # a sync adds requests: the same option (its label has no count) and a replay of every request now held
    eng = open_store(database_url())
    late = DAY0_MS + 16 * 3_600_000 + 1
    row = {"request_id": "late", "ts_ms": late, "model": "m", "api_base": "b", "prompt_tokens": 4000}
    store_batch(
        eng, source_id, [row | {"cached_tokens": 0, "output_tokens": 1, "ttft_ms": 1.0, "duration_ms": 1.0}], None
    )
    eng.dispose()
    at.run()
    assert not at.exception, at.exception
    assert at.selectbox(key="wi_source").value == ("source", source_id)
    assert any(
        c.value.startswith("Replayed: production traffic from OpenTelemetry spans, source “prod”, 481 requests")
        for c in at.caption
    )
