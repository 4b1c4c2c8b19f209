"""AppTest: the worksheet view — inputs → verdict and chart, save/reopen, URL round trip, bad database."""

import json

import pytest
from streamlit.testing.v1 import AppTest

from planner.worksheet.budget import SEGMENTS, Worksheet
from planner.worksheet.provenance import Figure
from planner.worksheet.url import query_for
from tests.app.conftest import new_app, plotly_array


def waterfall_y(at):
    return plotly_array(json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]["y"])


def test_defaults_show_a_positive_budget_the_waterfall_and_both_exports(app):
    app.run()
    assert not app.exception
    assert "360 ms remain for prefill" in app.success[0].value
    assert waterfall_y(app) == [500, -60, -0.0, -80, 360]
    assert app.metric[0].value == "360 ms"
    assert len(app.get("download_button")) == 2  # the exports: Markdown and JSON


def test_segment_larger_than_target_gives_the_red_verdict(app):
    app.run()
    app.number_input(key="network_ms").set_value(600).run()
    assert len(app.success) == 0
    msg = app.error[0].value
    assert "no model choice can fix this" in msg and "Network" in msg
    assert waterfall_y(app)[-1] == -160


def test_changing_the_interaction_type_moves_the_target(app):
    app.run()
    app.selectbox(key="interaction").set_value("inline").run()
    assert app.number_input(key="target_ms").value == 200
    assert waterfall_y(app)[0] == 200


def test_zero_prefill_rate_is_explained_and_the_budget_still_shows(app):
    app.run()
    app.number_input(key="prefill_tps").set_value(0).run()
    assert any("prefill rate must be greater than 0" in e.value for e in app.error)
    assert waterfall_y(app)[-1] == 360


def test_save_then_reopen_restores_the_inputs(app):
    app.run()
    app.number_input(key="queue_ms").set_value(120).run()
    app.text_input(key="save_name").set_value("Provider A").run()
    app.button(key="save").click().run()
    assert any("Saved" in s.value for s in app.success)
    app.number_input(key="queue_ms").set_value(5).run()
    app.button(key="open").click().run()
    assert app.number_input(key="queue_ms").value == 120
    # a second save under the same name is refused and the first is kept
    app.number_input(key="queue_ms").set_value(7).run()
    app.button(key="save").click().run()
    assert any("already exists" in e.value for e in app.error)
    fresh = new_app().run()
    fresh.button(key="open").click().run()
    assert fresh.number_input(key="queue_ms").value == 120


def test_compare_saved_worksheets_table_and_grouped_chart(app):
    app.run()
    for name, net in (("Frankfurt", 30), ("Oregon", 160)):
        app.number_input(key="network_ms").set_value(net).run()
        app.text_input(key="save_name").set_value(name).run()
        app.button(key="save").click().run()
    app.run()
    table = app.dataframe[-1].value
    assert list(table["Worksheet"]) == ["Oregon", "Frankfurt"]
    assert list(table["Prefill budget"]) == ["280 ms", "410 ms"]
    spec = json.loads(app.get("plotly_chart")[-1].proto.spec)
    assert spec["layout"]["barmode"] == "group"


def test_a_shared_url_reproduces_the_inputs():
    ws = Worksheet(interaction="inline", targets_ms={"inline": 250, "chat": 500, "agent": 1000})
    ws = ws.with_figure("queue_ms", Figure.typed(35, "ms")).with_figure(
        "cache_hit_fraction", Figure.typed(0.8, "fraction")
    )
    at = new_app()
    for part in query_for(ws, {"inline", "chat", "agent"}).split("&"):
        k, v = part.split("=")
        from urllib.parse import unquote_plus

        at.query_params[k] = unquote_plus(v)
    at.run()
    assert at.selectbox(key="interaction").value == "inline"
    assert at.number_input(key="target_ms").value == 250
    assert at.number_input(key="queue_ms").value == 35
    assert at.number_input(key="cache_hit").value == 0.8
    assert waterfall_y(at) == [250, -35, -0.0, -80, 135]


def test_custom_interaction_type_travels_in_the_url():
    at = new_app()
    at.query_params.update({"custom": "Review bot:3000", "interaction": "Review bot"})
    at.run()
    assert at.number_input(key="target_ms").value == 3000
    assert "Review bot" in at.selectbox(key="interaction").options


def test_adding_an_interaction_type(app):
    app.run()
    app.text_input(key="new_interaction_label").set_value("Code review bot").run()
    app.number_input(key="new_interaction_target").set_value(2500).run()
    app.button(key="add_interaction").click().run()
    assert "Code review bot" in app.selectbox(key="interaction").options
    assert app.query_params["custom"] == "Code review bot:2500"


def test_unreachable_database_keeps_the_calculator_working(app, monkeypatch):
    monkeypatch.setenv("TTFT_PLANNER_DATABASE_URL", "postgresql+psycopg://u:pw@127.0.0.1:1/none")
    app.run()
    assert not app.exception
    assert "360 ms remain" in app.success[0].value
    assert any("Saving is unavailable" in e.value and "pw" not in e.value for e in app.error)


def _reload(query: dict) -> AppTest:
    """A fresh session (a reload, or the link opened in another browser) on the URL `query`."""
    at = new_app()
    at.query_params.update(query)
    return at.run()


def _captions(at) -> list[str]:
    return [c.value for c in at.caption]


def test_a_hand_off_and_a_custom_type_stay_in_the_url_and_survive_a_reload(app):
    app.run()
    app.text_input(key="new_interaction_label").set_value("Review bot").run()
    app.number_input(key="new_interaction_target").set_value(3000).run()
    app.button(key="add_interaction").click().run()
    assert app.selectbox(key="interaction").value == "custom-review-bot"
    # a measured figure handed over from the Capacity page's Weight loading tab
    app.switch_page("views/capacity.py").run()
    app.button(key="cap_w_use").click().run()
    assert not app.exception
    cold = app.session_state["ws_figures"]["cold_ms"]
    query = dict(app.query_params)
    assert query["custom"] == "Review bot:3000" and query["interaction"] == "Review bot"
    assert float(query["cold_ms"]) == cold["value"] and "cold_ms_from" in query
    assert "queue_ms_from" not in query  # typed figures carry no provenance

    fresh = _reload(query)
    assert not fresh.exception
    assert fresh.selectbox(key="interaction").value == "custom-review-bot"
    assert fresh.number_input(key="target_ms").value == 3000
    assert fresh.number_input(key="cold_ms").value == cold["value"]
    described = next(c for c in _captions(fresh) if "constant-rate estimate" in c)
    assert described.startswith(":material/sensors: model · 70B fp8")
    # budget 3000 − 60 − cold − 80, the same as in the first session
    assert waterfall_y(fresh)[-1] == pytest.approx(3000 - 60 - cold["value"] - 80)


def test_a_value_edited_in_the_url_by_hand_is_typed_not_measured(app):
    app.run()
    app.switch_page("views/capacity.py").run()
    app.button(key="cap_w_use").click().run()
    query = dict(app.query_params)
    query["cold_ms"] = "1234"
    fresh = _reload(query)
    assert fresh.number_input(key="cold_ms").value == 1234
    assert ":material/edit: entered by hand" in _captions(fresh)[1 + list(SEGMENTS).index("cold_ms")]


def test_editing_a_measured_value_makes_it_typed_and_drops_its_provenance_from_the_url(app):
    app.run()
    app.switch_page("views/capacity.py").run()
    app.button(key="cap_w_use").click().run()
    assert "cold_ms_from" in app.query_params
    app.switch_page("views/worksheet.py").run()  # AppTest stays on the page it was switched to last
    app.number_input(key="cold_ms").set_value(500).run()
    assert "cold_ms_from" not in app.query_params and app.query_params["cold_ms"] == "500"


def test_opening_a_saved_worksheet_puts_its_name_in_the_field_and_overwrite_updates_that_one(app):
    app.run()
    for name, queue in (("Provider A", 10), ("Provider B", 20)):
        app.number_input(key="queue_ms").set_value(queue).run()
        app.text_input(key="save_name").set_value(name).run()
        app.button(key="save").click().run()
    app.selectbox(key="open_name").set_value("Provider A").run()
    app.button(key="open").click().run()
    assert app.text_input(key="save_name").value == "Provider A"
    assert any("Opened “Provider A”" in s.value for s in app.success)
    app.number_input(key="queue_ms").set_value(15).run()
    app.checkbox(key="save_overwrite").check().run()
    app.button(key="save").click().run()
    from planner.store import database_url, open_store
    from planner.store.worksheets import load_worksheet

    eng = open_store(database_url())
    assert load_worksheet(eng, "Provider A").queue_ms.value == 15
    assert load_worksheet(eng, "Provider B").queue_ms.value == 20


def test_delete_asks_first_and_says_what_it_did(app):
    app.run()
    app.text_input(key="save_name").set_value("Old plan").run()
    app.button(key="save").click().run()
    assert app.button(key="delete").disabled
    app.checkbox(key="delete_confirm").check().run()
    app.button(key="delete").click().run()
    assert any("Deleted “Old plan”" in s.value for s in app.success)
    assert any("No saved worksheets yet" in i.value for i in app.info)


def test_the_verdict_quotes_the_uncached_prompt_it_names(app):
    app.run()
    app.number_input(key="target_ms").set_value(200).run()
    # budget 200 − 60 − 0 − 80 = 60 ms → 60 ms × 12,000 tokens/s = 720 uncached tokens = a 1,440-token prompt at 50 %
    msg = app.warning[0].value
    assert "Shrink the uncached part of the p95 prompt to 720 tokens" in msg
    assert "a 1,440-token p95 prompt at a 50% cache-hit rate" in msg


def test_a_negative_budget_is_labelled_with_a_minus_sign(app):
    app.run()
    app.number_input(key="network_ms").set_value(555).run()
    bar_text = json.loads(app.get("plotly_chart")[0].proto.spec)["data"][0]["text"]
    assert bar_text[-1] == "−115 ms" and bar_text[3] == "−555 ms" and bar_text[0] == "500 ms"
    assert app.metric[0].value == "−115 ms"


def test_a_changed_builtin_target_travels_while_another_type_is_in_force(app):
    app.run()
    app.number_input(key="target_ms").set_value(800).run()  # chat
    app.selectbox(key="interaction").set_value("agent").run()
    query = dict(app.query_params)
    assert query["targets"] == "chat:800" and query["interaction"] == "Agent-loop call"
    fresh = _reload(query)
    fresh.selectbox(key="interaction").set_value("chat").run()
    assert fresh.number_input(key="target_ms").value == 800


def test_the_per_type_table_reads_in_words_and_units(app):
    app.run()
    app.text_input(key="new_interaction_label").set_value("Review bot").run()
    app.number_input(key="new_interaction_target").set_value(3000).run()
    app.button(key="add_interaction").click().run()
    table = app.dataframe[0].value
    rows = table.set_index("Interaction").to_dict(orient="index")
    # 4,000 tokens × (1 − 0.5) at 12,000 tokens/s = 167 ms; inline: 200 − 60 − 0 − 80 = 60 ms
    assert rows["Review bot"] == {
        "Target": "3,000 ms",
        "Prefill budget": "2,860 ms",
        "Needed": "167 ms",
        "Max p95 prompt": "68,640 tokens",
        "Verdict": "fits",
    }
    assert rows["Inline completion"]["Verdict"] == "prompt too long"
    assert "nan" not in table.to_string() and "None" not in table.to_string()


def test_a_different_link_in_the_same_session_replaces_the_inputs_and_an_empty_one_keeps_them(app):
    app.run()
    app.number_input(key="queue_ms").set_value(120).run()
    app.switch_page("views/whatif.py").run()
    app.switch_page("views/worksheet.py").run()  # arriving without parameters: the session's worksheet stays
    assert app.number_input(key="queue_ms").value == 120
    assert app.query_params["queue_ms"] == "120"
    # a different link opened in the same tab (a pasted link, back/forward): its inputs replace the session's
    app.query_params.clear()
    app.query_params.update({"queue_ms": "35", "target_ms": "250", "interaction": "Inline completion"})
    app.run()
    assert app.number_input(key="queue_ms").value == 35 and app.number_input(key="target_ms").value == 250
    assert app.selectbox(key="interaction").value == "inline"
