"""AppTest: the Regions view — browser samples injected through session state, table, map, worksheet hand-off.
The server probe (a request to the worker) is tested in test_regions_server_probe.py."""

from __future__ import annotations

import json
import time

import pytest

from planner.regions.catalog import catalog
from planner.store import open_store
from planner.store.rtt import SampleRecord, insert_rtt_samples, load_samples
from tests.app.conftest import open_page, plotly_array, shown_table


def _browser_run(run_id, values, *, region="aws-eu-west-1", method="resource-timing", vantage="Berlin office"):
    now = int(time.time() * 1000)
    return {
        "result": {
            "run_id": run_id,
            "vantage": vantage,
            "samples": [
                {
                    "region_id": region,
                    "url": "https://dynamodb.eu-west-1.amazonaws.com/ping",
                    "method": method,
                    "rtt_ms": v,
                    "error_class": None,
                    "error_detail": None,
                    "measured_at_ms": now,
                }
                for v in values
            ],
        }
    }


def _table(at):
    """The ranked table as its reader sees it (a wrapped static table), indexed by the region's catalog id."""
    table = shown_table(at)
    ids = {r.label: r.id for r in catalog()}
    return table.assign(region_id=[ids.get(label, label) for label in table["Region"]])


def test_empty_store_says_how_to_get_samples_and_mounts_the_browser_probe():
    at = open_page("regions")
    assert "No RTT samples" in at.info[0].value
    assert len(at.get("bidi_component")) == 1
    assert at.button(key="rtt_probe_server").label == "Probe from the server"


def test_browser_samples_are_stored_once_with_the_vantage_and_ranked():
    at = open_page("regions")
    at.session_state["browser_rtt"] = _browser_run("run-1", [20.0 + i for i in range(10)])
    at.run()
    assert not at.exception, at.exception
    assert "Stored 10 browser samples as “Berlin office”" in at.success[0].value
    row = _table(at).iloc[0]
    assert (row["region_id"], row["Side"], row["Vantage"]) == ("aws-eu-west-1", "browser", "Berlin office")
    assert (row["Median (ms)"], row["Min (ms)"], row["p90 (ms)"], row["Samples (n)"]) == ("24.0", "20.0", "28.0", "10")
    assert row["Method"] == "Resource Timing"
    geo = [t for t in json.loads(at.get("plotly_chart")[0].proto.spec)["data"] if t.get("name") == "median RTT"][0]
    assert plotly_array(geo["marker"]["color"]) == [24.0]
    at.run()  # a rerun with the same component state must not store the run again
    assert len(load_samples(open_store())) == 10


def test_fallback_without_timing_allow_origin_is_labelled():
    at = open_page("regions")
    at.session_state["browser_rtt"] = _browser_run("run-2", [50.0, 52.0, 54.0], method="fetch-performance-now")
    at.run()
    assert any("Timing-Allow-Origin" in w.value for w in at.warning)
    assert "fallback" in _table(at).iloc[0]["Method"]


def test_each_failing_region_shows_its_own_reason_and_the_rest_still_fill():
    eng = open_store()
    now = int(time.time() * 1000)
    insert_rtt_samples(
        eng,
        [SampleRecord("aws-us-east-1", "x", "server", "tcp-connect", 80.0 + i, now, vantage="srv") for i in range(10)],
    )
    insert_rtt_samples(
        eng,
        [
            SampleRecord(
                "openai-api",
                "x",
                "server",
                "dns",
                None,
                now,
                vantage="srv",
                error_class="unresolvable",
                error_detail="'api.openai.com' did not resolve",
            )
        ],
    )
    at = open_page("regions")
    t = _table(at).set_index("region_id")
    assert t.loc["aws-us-east-1", "Median (ms)"] == "84.0" and t.loc["aws-us-east-1", "Status"] == "ok"
    # no RTT for a failed region: the table says so, as every table on the page shows a missing value
    assert [t.loc["openai-api", c] for c in ("Median (ms)", "Min (ms)", "p90 (ms)")] == ["—", "—", "—"]
    assert t.loc["openai-api", "Status"].startswith("unresolvable")
    # its reason in full, under the table
    [why] = [c.value for c in at.caption if "did not resolve" in c.value]
    assert "unresolvable: 'api.openai.com' did not resolve" in why.replace("\\", "") and "anycast" in why
    assert t.iloc[-1].name == "openai-api"  # failures rank last


def test_use_for_worksheet_hands_over_rtt_times_round_trips_with_provenance():
    at = open_page("regions")
    at.session_state["browser_rtt"] = _browser_run("run-3", [20.0 + i for i in range(10)])
    at.run()
    at.radio(key="rtt_round_trips").set_value(3).run()
    assert at.metric[0].value == "72.0 ms"
    at.button(key="rtt_use").click().run()
    assert not at.exception, at.exception
    assert at.number_input(key="network_ms").value == 72.0
    assert at.session_state["ws_figures"]["network_ms"]["source"] == "rtt"
    assert "Berlin office" in at.session_state["ws_figures"]["network_ms"]["detail"]


def test_remembered_location_label_is_restored():
    at = open_page("regions")
    at.session_state["browser_rtt"] = {"remembered_vantage": "Lisbon home"}
    at.run()
    assert at.text_input(key="rtt_vantage").value == "Lisbon home"


@pytest.mark.parametrize("target, message", [("not a target", "host:port"), ("ftp://x.example/", "scheme")])
def test_bad_custom_target_is_refused_with_the_reason(target, message):
    at = open_page("regions")
    form_inputs = [t for t in at.text_input if t.key != "rtt_vantage"]
    form_inputs[0].set_value("mine")
    form_inputs[1].set_value(target)
    [b for b in at.button if b.label == "Add target"][0].click().run()
    assert any(message in e.value for e in at.error)


def test_map_reads_its_shapes_from_the_app_and_its_scale_starts_at_zero():
    eng = open_store()
    now = int(time.time() * 1000)
    insert_rtt_samples(eng, [SampleRecord("aws-eu-west-1", "x", "server", "tcp-connect", 0.4, now, vantage="")])
    at = open_page("regions")
    chart = next(c for c in at.get("plotly_chart") if "rtt_map" in c.proto.id)
    assert json.loads(chart.proto.config)["topojsonURL"] == "app/static/topojson/"
    from pathlib import Path

    assert (
        Path(__file__).resolve().parents[2] / "app" / "static" / "topojson" / "world_110m.json"
    ).stat().st_size > 100_000
    marker = next(t for t in json.loads(chart.proto.spec)["data"] if t.get("name") == "median RTT")["marker"]
    assert marker["cmin"] == 0.0 and marker["cmax"] >= 1.0  # never a −0.4…0.4 ms scale around one value
    # The server's own samples carry the one default vantage, shown in words.
    assert _table(at).iloc[0]["Vantage"] == "this server (default vantage)"


def test_adding_a_target_says_so():
    at = open_page("regions")
    form_inputs = [t for t in at.text_input if t.key != "rtt_vantage"]
    form_inputs[0].set_value("mine")
    form_inputs[1].set_value("https://example.invalid/health")
    [b for b in at.button if b.label == "Add target"][0].click().run()
    assert not at.exception, at.exception
    assert any("Added target “mine”" in s.value for s in at.success)


def test_server_samples_default_to_the_workers_vantage(monkeypatch):
    from planner.probes.rtt import default_vantage

    monkeypatch.delenv("TTFT_PLANNER_VANTAGE", raising=False)
    assert default_vantage() == ""  # the worker's default too: one server, one vantage
    monkeypatch.setenv("TTFT_PLANNER_VANTAGE", "berlin-rack")
    assert default_vantage() == "berlin-rack"


def test_ranked_table_follows_the_rtt_rank_rule():
    """The page's table ranks and notes as `ttft-planner rtt` does (planner.probes.rtt_rank): fastest median first,
    no median last, ties by label; a failure and a proxy in the status sentence."""
    import math

    import pandas as pd

    from ttft_planner_app.charts.regions import ranked_rows

    def rec(region_id, median, n, err=None, detail=None, proxy=None):
        return {
            "region_id": region_id,
            "side": "server",
            "vantage": "",
            "method": "tcp-connect",
            "median_ms": median,
            "min_ms": median,
            "p90_ms": median,
            "n": n,
            "n_errors": int(err is not None),
            "last_error_class": err,
            "last_error_detail": detail,
            "proxy": proxy,
            "last_measured_at_ms": 0,
        }

    summary = pd.DataFrame(
        [
            rec("slow", 30.0, 2),
            rec("down", math.nan, 0, "refused", "port closed", "http://p:1"),
            rec("fast", 5.0, 2),
            rec("also-slow", 30.0, 1),
            rec("idle", math.nan, 0),
        ]
    )
    rows = ranked_rows(summary, [])
    assert rows["region_id"].tolist() == ["fast", "also-slow", "slow", "down", "idle"]
    assert rows["rank"].tolist() == [1, 2, 3, 4, 5]
    assert rows["status"].tolist()[-2:] == [
        "refused: port closed (TCP figures are to the proxy http://p:1)",
        "no samples",
    ]
    assert rows["outcome"].tolist()[-2:] == ["refused · via proxy", "no samples"]
