"""AppTest: the Capacity & cost page — break-even, weight loading, GPU fit, prefill, warm pool, worksheet hand-off."""

import re

import numpy as np
import pandas as pd
import pytest

from planner.capacity import specs as P
from planner.logs import COLUMNS, LogParseResult
from planner.store import database_url, open_store
from planner.store.logs import save_upload
from tests.app.conftest import chart_spec, new_app, open_page, plotly_array, table_with
from tests.support.probe_rows import slot_row

SEED = "seed-h200"


def metric(app, label):
    return next(m.value for m in app.metric if m.label == label)


def set_flat_price(app, usd):
    key = app.selectbox(key="cap_price").value
    for kind in ("pin", "pc", "pout"):
        app.number_input(key=f"cap_{kind}_{key}").set_value(usd)


def test_seed_break_even_on_the_page_states_node_and_tokens(app):
    open_page("capacity", app)
    assert app.selectbox(key="cap_gpu_price").value == SEED
    set_flat_price(app, 0.212)
    app.run()
    assert metric(app, "Break-even u*") == "35%"
    assert "Dedicated is cheaper above 35% utilisation of a 1-GPU replica" in app.success[0].value
    title = chart_spec(app, "cap_be_chart")["layout"]["title"]["text"]
    assert "1-GPU replica" in title and "cached prompt tokens included" in title
    inputs = app.session_state["cost_inputs"]
    assert inputs["gpu_usd_per_hour"] == 3.20 and inputs["capacity_tokens_per_min"] == 720_000

    app.number_input(key="cap_gpr").set_value(8).run()
    assert "Serverless is cheaper at any utilisation" in app.warning[0].value
    assert "8-GPU replica" in chart_spec(app, "cap_be_chart")["layout"]["title"]["text"]
    assert app.session_state["cost_inputs"]["gpus_per_replica"] == 8


def test_capacity_zero_is_a_message_not_a_traceback(app):
    open_page("capacity", app)
    app.number_input(key=f"cap_tpm_{SEED}").set_value(0.0).run()
    assert not app.exception
    assert any("capacity" in e.value and "greater than 0" in e.value for e in app.error)


def test_weight_projection_cold_start_to_worksheet_and_tables_in_words(app):
    open_page("capacity", app)
    # Every table on the page: no snake_case header, no missing-value marker.
    for df in app.dataframe:
        for col in df.value.columns:
            assert not re.fullmatch(r"[a-z0-9]+(_[a-z0-9]+)+", str(col)), col
        if "Source" in df.value.columns:
            continue  # the editable preset tables: an empty cell there is a preset without that figure
        text = df.value.to_string()
        assert "nan" not in text.split() and "None" not in text and "NaT" not in text
    table = table_with(app, "Load + start-up")  # rate → load seconds for the 70B fp8 checkpoint
    secs = sorted(round(float(s.removesuffix(" s"))) for s in table["Load + start-up"])
    assert secs == [23, 224]
    assert metric(app, "Checkpoint (weights only)") == "70.0 GB"
    app.button(key="cap_w_use").click().run()
    assert not app.exception
    cold = app.session_state["ws_figures"]["cold_ms"]
    assert cold["source"] == "model" and round(cold["value"] / 1000) == 23
    assert "constant-rate estimate" in cold["window"]


def test_gpu_fit_no_fit_is_explained(app):
    open_page("capacity", app)
    app.selectbox(key="cap_fit_model").set_value("llama-3.1-405b").run()
    app.selectbox(key="cap_fit_gpu").set_value("L4").run()
    assert any("does not fit on one 8×L4" in e.value for e in app.error)


def test_prefill_model_rate_goes_to_the_worksheet(app):
    open_page("capacity", app)
    app.selectbox(key="cap_pf_model").set_value("llama-3.1-8b")
    app.number_input(key="cap_pf_prompt_0").set_value(8192.0)
    app.number_input(key="cap_pf_hit_0").set_value(0.0).run()
    assert metric(app, "Modelled prefill") == "302 ms"
    app.button(key="cap_pf_use").click().run()
    fig = app.session_state["ws_figures"]["prefill_tokens_per_s"]
    assert fig["source"] == "model" and fig["unit"] == "tokens/s"
    assert fig["value"] == pytest.approx(8192 / 0.302, rel=0.01)
    assert "Llama 3.1 8B" in fig["detail"]


def test_warm_pool_textbook_defaults(app):
    open_page("capacity", app)
    app.number_input(key="cap_wp_rate_0").set_value(30.0)
    app.number_input(key="cap_wp_service_0").set_value(300.0)
    app.number_input(key="cap_wp_reps").set_value(4).run()
    assert metric(app, "P(wait)") == "32.0%"
    assert metric(app, "Queue-wait p95") == "371.2 s"
    app.number_input(key="cap_wp_target").set_value(0.0).run()
    assert metric(app, "Minimum warm replicas") == "6"
    trace = chart_spec(app, "cap_wp_chart")["data"][0]
    assert trace["text"][0] == "10 s" and trace["text"][-1] == "always warm"
    # W = 10 s at 30 requests/h: nearly every request is cold, so the 60 s cold start is in the p95
    assert plotly_array(trace["y"])[0] == 60_500 and plotly_array(trace["y"])[-1] == 500


def test_a_stored_log_drives_the_mix_and_the_peak_rate(app, tmp_path):
    day = 1_780_000_000_000 - 1_780_000_000_000 % 86_400_000
    # 40 requests in the 09:00 UTC hour, 2 at 15:00: the peak clock hour has 40
    ts = [day + 9 * 3_600_000 + i * 30_000 for i in range(40)] + [day + 15 * 3_600_000, day + 15 * 3_600_000 + 60_000]
    n = len(ts)
    frame = pd.DataFrame(
        {
            "ts_ms": np.array(ts, dtype=np.int64),
            "model": ["m"] * n,
            "prompt_tokens": [2000] * n,
            "cached_tokens": [1500] * n,
            "output_tokens": [20] * n,
            "ttft_ms": [300.0] * n,
            "duration_ms": [5000.0] * n,
            "source": ["t"] * n,
        }
    )[list(COLUMNS)]
    eng = open_store(database_url())
    upload_id = save_upload(eng, "team.jsonl", LogParseResult(requests=frame))
    eng.dispose()
    open_page("capacity", app)
    app.selectbox(key="cap_traffic").set_value(upload_id).run()
    assert not app.exception
    assert any("42 requests" in c.value and "75.0% of prompt tokens cached" in c.value for c in app.caption)
    assert app.number_input(key=f"cap_wp_rate_{upload_id}").value == 40
    assert app.number_input(key=f"cap_wp_service_{upload_id}").value == 5.0
    assert app.number_input(key=f"cap_pf_hit_{upload_id}").value == pytest.approx(0.75)
    assert app.session_state["cost_inputs"]["traffic_label"].startswith("team.jsonl")
    assert app.session_state["cost_inputs"]["hourly_tokens"][9] == pytest.approx(40 * 2020)


def test_a_measured_slope_is_offered_and_handed_over_as_a_probe_figure(app):
    import time

    from planner.spread import speed_sd_of
    from planner.store.database import session
    from planner.store.endpoints import EndpointRow
    from planner.store.probes import insert_samples

    now = int(time.time() * 1000)
    eng = open_store(database_url())
    with session(eng) as s:
        ep = EndpointRow(
            name="sim-local", base_url="http://127.0.0.1:9", model="m", created_at_ms=now, updated_at_ms=now
        )
        s.add(ep)
        s.flush()
        ep_id = ep.id
    # 20 ms per 1K uncached tokens yesterday, 30 today: 25 ms per 1K together → 40,000 tokens/s, and a day-to-day
    # speed spread (50,000 against 33,333 tokens/s)
    day_ms = 86_400_000
    insert_samples(
        eng,
        [
            slot_row(
                ep_id, now - day_ms * (i < 3) + i, 50 + (0.02 if i < 3 else 0.03) * t, prompt_tokens=t, cached_tokens=0
            )
            for i, t in enumerate([256, 2048, 8192, 256, 2048, 8192])
        ],
    )
    eng.dispose()
    open_page("capacity", app)
    assert "measured: sim-local" in app.radio(key="cap_pf_mode").options
    app.radio(key="cap_pf_mode").set_value("measured: sim-local").run()
    assert metric(app, "Prefill rate") == "40,000 tokens/s"
    spread = speed_sd_of((50_000, 1e6 / 30))
    assert any(f"over 2 days (speed_sd={spread:.3f}" in c.value for c in app.caption), [c.value for c in app.caption]
    app.button(key="cap_pf_use").click().run()
    fig = app.session_state["ws_figures"]["prefill_tokens_per_s"]
    assert fig["source"] == "probe" and fig["n"] == 6 and "sim-local" in fig["detail"]
    assert fig["value"] == pytest.approx(40_000)


def _seed_log(name: str, ts: list[int], tokens: int = 1000, duration_ms: float | None = None) -> int:
    n = len(ts)
    frame = pd.DataFrame(
        {
            "ts_ms": np.array(ts, dtype=np.int64),
            "model": ["m"] * n,
            "prompt_tokens": [tokens - 10] * n,
            "cached_tokens": [0] * n,
            "output_tokens": [10] * n,
            "ttft_ms": [np.nan] * n,
            "duration_ms": [np.nan if duration_ms is None else duration_ms] * n,
            "source": ["t"] * n,
        }
    )[list(COLUMNS)]
    eng = open_store(database_url())
    upload_id = save_upload(eng, name, LogParseResult(requests=frame))
    eng.dispose()
    return upload_id


def test_a_715_hour_log_is_averaged_over_the_hours_it_covers(app):
    from planner.capacity.cost import HOURS_PER_MONTH

    day = 1_780_000_000_000 - 1_780_000_000_000 % 86_400_000
    start = day + 20 * 3_600_000 + 15 * 60_000  # 20:15 UTC, then 71.5 h: four calendar days
    ts = list(range(start, start + int(71.5 * 3_600_000) + 1, 300_000))
    upload_id = _seed_log("71h.jsonl", ts, tokens=100_000)
    app.session_state["viewer_tz"] = "UTC"
    open_page("capacity", app)
    app.selectbox(key="cap_traffic").set_value(upload_id).run()
    caption = next(c.value for c in app.caption if "tokens/month" in c.value)
    shown_b = float(caption.split("Your traffic: ")[1].split("B tokens/month")[0])
    by_hand_b = 100_000 * len(ts) / 71.5 * HOURS_PER_MONTH / 1e9
    assert shown_b == pytest.approx(by_hand_b, abs=0.011)
    assert by_hand_b * 71.5 / 96 < shown_b - 0.1  # far from the calendar-day average (÷ 4 days)
    assert any("averaged over the 72 clock hours it covers, in UTC" in c.value for c in app.caption)
    assert any("Hours of day in UTC" in c.value for c in app.caption)


def test_typed_prices_and_the_traffic_source_survive_leaving_the_page(app):
    upload_id = _seed_log("team.jsonl", [1_780_000_000_000 + i * 60_000 for i in range(30)])
    open_page("capacity", app)
    app.selectbox(key="cap_traffic").set_value(upload_id)
    set_flat_price(app, 0.777)
    app.number_input(key="cap_gpr").set_value(4).run()
    app.switch_page("views/worksheet.py").run()
    app.switch_page("views/whatif.py").run()
    open_page("capacity", app)
    key = app.selectbox(key="cap_price").value
    assert app.selectbox(key="cap_traffic").value == upload_id
    assert app.number_input(key=f"cap_pin_{key}").value == pytest.approx(0.777)
    assert app.number_input(key="cap_gpr").value == 4
    assert app.session_state["cost_inputs"]["input_usd_per_mtok"] == pytest.approx(0.777)


def test_the_prefill_tab_reads_the_worksheet(app):
    app.run()
    app.number_input(key="target_ms").set_value(800)
    app.number_input(key="queue_ms").set_value(100)
    app.number_input(key="network_ms").set_value(40)
    app.number_input(key="prompt_p95").set_value(6000).run()
    app.text_input(key="new_interaction_label").set_value("Review bot").run()
    app.number_input(key="new_interaction_target").set_value(3000).run()
    app.button(key="add_interaction").click().run()
    open_page("capacity", app)
    assert app.number_input(key="cap_pf_prompt_0").value == 6000
    assert app.number_input(key="cap_pf_q").value == 100 and app.number_input(key="cap_pf_n").value == 40
    assert app.number_input(key="cap_pf_hit_0").value == 0.5
    table = next(d.value for d in app.dataframe if "Interaction type" in d.value.columns)
    targets = dict(zip(table["Interaction type"], table["Target"], strict=True))
    budgets = dict(zip(table["Interaction type"], table["Prefill budget"], strict=True))
    assert targets["Review bot"] == "3,000 ms" and budgets["Review bot"] == f"{3000 - 100 - 0 - 40:,} ms"
    assert budgets["Chat panel / single-file edit"] == f"{800 - 100 - 40:,} ms"


def test_warm_pool_service_time_comes_from_the_log_or_says_where_it_comes_from(app):
    t0 = 1_780_000_000_000
    with_durations = _seed_log("timed.jsonl", [t0 + i * 60_000 for i in range(30)], duration_ms=4000.0)
    without = _seed_log("untimed.jsonl", [t0 + i * 60_000 for i in range(30)], tokens=1000)
    open_page("capacity", app)
    assert any("typical chat turn" in c.value for c in app.caption)
    app.selectbox(key="cap_traffic").set_value(with_durations).run()
    assert app.number_input(key=f"cap_wp_service_{with_durations}").value == 4.0
    assert any("the log's mean request duration, 4.0 s over 30 requests" in c.value for c in app.caption)
    app.selectbox(key="cap_traffic").set_value(without).run()
    # no durations: 10 output tokens at 60 tokens/s, no TTFT logged
    assert app.number_input(key=f"cap_wp_service_{without}").value == pytest.approx(10 / 60)
    assert any(
        "no durations and no first-token times" in c.value and "TTFT not included" in c.value for c in app.caption
    )
    assert not any("0.0 s" in c.value for c in app.caption)
    assert not any("Overloaded" in e.value for e in app.error)


def test_the_address_reproduces_the_traffic_source_and_typed_prices():
    """The widgets are bound to the URL (the browser writes it, tests/e2e checks that); a link opens the same inputs."""
    upload_id = _seed_log("team.jsonl", [1_780_000_000_000 + i * 60_000 for i in range(30)])
    price = P.serverless_prices()[0].key
    fresh = new_app()
    fresh.query_params.update({"cap_traffic": "team.jsonl (30 requests)", f"cap_pin_{price}": "0.777", "cap_gpr": "4"})
    open_page("capacity", fresh)
    assert fresh.selectbox(key="cap_traffic").value == upload_id
    assert fresh.number_input(key=f"cap_pin_{price}").value == pytest.approx(0.777)
    assert fresh.number_input(key="cap_gpr").value == 4
    assert fresh.session_state["cost_inputs"]["input_usd_per_mtok"] == pytest.approx(0.777)


def test_a_gpu_fit_bar_is_labelled_with_its_own_height():
    import pandas as pd

    from ttft_planner_app.charts.capacity import gpu_fit_figure

    table = pd.DataFrame(
        {"gpu": ["L40S", "H100", "A10G"], "min_gpus": [3, 1, 9], "tp_gpus": [4, 1, None], "fits": [True, True, False]}
    )
    bar = gpu_fit_figure(table).data[0]
    assert list(bar.x) == [3, 1, 9] and bar.orientation == "h"
    # 3 GPUs hold the model; tensor parallelism runs it on 4: the label says both, never "4" over a bar of 3
    assert list(bar.text) == ["needs 3, runs on 4 (tensor parallel)", "1 GPU", "≥ 9 GPUs: no single node"]


def test_emptied_preset_cells_are_named_and_their_rows_left_out_never_a_traceback_or_nan(app):
    """Issue 28: an emptied cell in the GPU or model preset editor (a NaN in the table) is a message naming the row
    and the column as the table heads it; that row leaves the lists, every other row still works; no NaN figure."""
    gpus, models = P.gpus(), P.models()
    open_page("capacity", app)
    app.session_state["cap_gpu_editor"] = {
        "edited_rows": {0: {"Memory (GiB)": None}, 1: {"GPU": None}},
        "added_rows": [],
        "deleted_rows": [],
    }
    app.session_state["cap_model_editor"] = {
        "edited_rows": {0: {"Layers": None}},
        "added_rows": [{}, {"Model": "my 7B", "Parameters (B)": 7}],  # a blank new row, and one half filled in
        "deleted_rows": [],
    }
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    warnings = [w.value for w in app.warning]
    assert f"GPU row {gpus[0].label!r}: the Memory (GiB) cell is empty" in " ".join(warnings)
    assert f"model row {models[0].label!r}: the Layers cell is empty" in " ".join(warnings)
    assert "model row 'my 7B': the Layers cell is empty" in " ".join(warnings)
    assert not any("'custom'" in w for w in warnings)  # the blank new row is ignored, not reported
    assert all("left out" in w for w in warnings) and not any("_" in w for w in warnings)  # no field names
    fit_gpus = app.selectbox(key="cap_fit_gpu").options
    assert gpus[0].label not in fit_gpus and gpus[1].key in fit_gpus  # an emptied name falls back to the key
    assert models[0].label not in app.selectbox(key="cap_fit_model").options
    table = next(t.value for t in app.table if "Weights + KV cache" in t.value.columns)
    assert not table.astype(str).apply(lambda col: col.str.contains("nan|None|inf", case=False)).any().any()
    title = chart_spec(app, "cap_fit_chart")["layout"]["title"]["text"]
    assert "nan" not in title.lower()


def _seed_source_and_upload() -> tuple[int, int]:
    """42 requests (40 in the 09:00 UTC hour, 2 at 15:00) as a production source's requests (store_batch, as a sync
    stores them) and, read back as the Logs page reads a source, saved as a stored upload: (source id, upload id)."""
    from planner.store.sources import SourceKind, add_source, load_source_frame, store_batch

    day = 1_780_000_000_000 - 1_780_000_000_000 % 86_400_000
    ts = [day + 9 * 3_600_000 + i * 30_000 for i in range(40)] + [day + 15 * 3_600_000, day + 15 * 3_600_000 + 60_000]
    rows = [
        {
            "request_id": f"r{i}",
            "ts_ms": t,
            "model": "m",
            "api_base": "http://vllm:8000",
            "prompt_tokens": 2000,
            "cached_tokens": 1500,
            "output_tokens": 20,
            "ttft_ms": 300.0,
            "duration_ms": 5000.0,
        }
        for i, t in enumerate(ts)
    ]
    eng = open_store(database_url())
    try:
        source_id = add_source(eng, "prod", SourceKind.OTLP, "OTLP_TOKEN")
        store_batch(eng, source_id, rows, (ts[-1], f"r{len(ts) - 1}"))
        upload_id = save_upload(eng, "same.jsonl", LogParseResult(requests=load_source_frame(eng, source_id)))
    finally:
        eng.dispose()
    return source_id, upload_id


def _traffic_shown(app, key) -> dict:
    """The traffic figures the page shows for the traffic choice keyed `key` in the tabs' inputs."""
    caption = next(c.value for c in app.caption if "requests over" in c.value and "clock hours" in c.value)
    inputs = app.session_state["cost_inputs"]
    return {
        "caption": caption.split(": ", 1)[1],  # after "From the log" / "From production traffic from …"
        "monthly": next(c.value for c in app.caption if "tokens/month" in c.value),
        "hourly_tokens": inputs["hourly_tokens"],
        "rate": app.number_input(key=f"cap_wp_rate_{key}").value,
        "service": app.number_input(key=f"cap_wp_service_{key}").value,
        "hit": app.number_input(key=f"cap_pf_hit_{key}").value,
    }


def test_a_production_source_gives_the_same_traffic_as_the_same_rows_stored_as_an_upload(app):
    """Issue 32: the selector offers a source with requests next to the uploads; its figures are the upload's."""
    from planner.store.sources import SourceKind, add_source

    source_id, upload_id = _seed_source_and_upload()
    eng = open_store(database_url())
    add_source(eng, "idle", SourceKind.LITELLM, "PROXY_DSN")  # no requests yet: not offered
    eng.dispose()
    app.session_state["viewer_tz"] = "UTC"
    open_page("capacity", app)
    picker = app.selectbox(key="cap_traffic")
    assert picker.options == ["Typed numbers", "same.jsonl (42 requests)", "production: prod (OpenTelemetry)"]
    app.selectbox(key="cap_traffic").set_value(upload_id).run()
    from_upload = _traffic_shown(app, upload_id)
    app.selectbox(key="cap_traffic").set_value(f"source-{source_id}").run()
    assert not app.exception, app.exception
    # the tabs' inputs for a source are its own (keyed by its id negated), never the upload's of the same number
    from_source = _traffic_shown(app, -source_id)
    assert from_source == from_upload
    assert from_source["rate"] == 40 and from_source["hit"] == pytest.approx(0.75)
    assert any(
        c.value.startswith("From production traffic from OpenTelemetry spans, source “prod” (up to")
        for c in app.caption
    )
    assert app.session_state["cost_inputs"]["traffic_label"] == "production: prod (OpenTelemetry, 42 requests)"


def test_the_address_reopens_a_source_never_the_upload_of_the_same_id():
    source_id, upload_id = _seed_source_and_upload()
    assert source_id == upload_id  # the same number: the address must still tell them apart
    fresh = new_app()
    fresh.query_params.update({"cap_traffic": "production: prod (OpenTelemetry)"})
    open_page("capacity", fresh)
    assert fresh.selectbox(key="cap_traffic").value == f"source-{source_id}"
    assert fresh.session_state["cost_inputs"]["traffic_label"].startswith("production: prod")
