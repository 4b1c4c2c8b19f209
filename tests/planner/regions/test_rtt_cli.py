"""`ttft-planner rtt` and `ttft-planner regions …` through click, against a real local target and a temp store."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from planner.cli import cli
from tests.support.rtt_target import serve_in_thread


@pytest.fixture(scope="module")
def target():
    server = serve_in_thread()
    yield server
    server.stop()


@pytest.fixture
def runner(tmp_path, monkeypatch):
    monkeypatch.setenv("TTFT_PLANNER_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("TTFT_PLANNER_DATABASE_URL", raising=False)
    return CliRunner()


def test_rtt_url_json_reports_min_median_p90_and_spread(runner, target):
    res = runner.invoke(cli, ["rtt", "--url", f"{target.base_url}/ping", "-n", "10", "--json", "--vantage", "ci"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    r = out["results"][0]
    assert out["vantage"] == "ci" and r["error_class"] is None
    assert r["tcp_connect_ms"]["n"] == 10 and len(r["tcp_connect_ms"]["samples"]) == 10
    t = r["tcp_connect_ms"]
    assert t["min"] <= t["median"] <= t["p90"] and t["spread"] == pytest.approx(t["p90"] - t["min"])
    assert r["ttfb_ms"] is not None and r["http_status"] == 200


def test_failing_target_keeps_its_row_and_the_others(runner, target):
    res = runner.invoke(cli, ["rtt", "--url", f"{target.base_url}/ping", "--url", "127.0.0.1:1", "-n", "3"])
    assert res.exit_code == 0, res.output
    assert "refused" in res.output and "127.0.0.1:1" in res.output
    assert "median" in res.output


def test_all_failing_exits_1(runner):
    res = runner.invoke(cli, ["rtt", "--url", "127.0.0.1:1", "-n", "2"])
    assert res.exit_code == 1 and "refused" in res.output


@pytest.mark.parametrize(
    "args, message",
    [
        ([], "--region ID, --url URL or --all"),
        (["--url", "nonsense"], "host:port"),
        (["--region", "no-such-region"], "no region with id"),
        (["--url", "x.example:443", "-n", "0"], "-n"),
        (["--url", "x.example:443", "--proxy", "socks5://p:1"], "http://host:port"),
    ],
)
def test_bad_input_exits_2_naming_the_option(runner, args, message):
    res = runner.invoke(cli, ["rtt", *args])
    assert res.exit_code == 2
    assert message in res.output


def test_regions_add_schedule_list_store_remove(runner, target):
    res = runner.invoke(
        cli,
        [
            "regions",
            "add",
            "local-box",
            f"{target.base_url}/ping",
            "--lat",
            "52.5",
            "--lon",
            "13.4",
            "--interval-s",
            "60",
        ],
    )
    assert res.exit_code == 0 and "every 60 s" in res.output
    assert runner.invoke(cli, ["regions", "add", "aws-eu-west-1", "--no-schedule"]).exit_code == 0
    listed = [json.loads(line) for line in runner.invoke(cli, ["regions", "list", "--json"]).stdout.splitlines()]
    by_id = {r["id"]: r for r in listed}
    assert by_id["local-box"]["custom"] and by_id["local-box"]["scheduled"] and by_id["local-box"]["interval_s"] == 60
    assert not by_id["aws-eu-west-1"]["scheduled"] and by_id["openai-api"]["anycast"]
    res = runner.invoke(cli, ["rtt", "--region", "local-box", "-n", "5", "--store", "--vantage", "ci"])
    assert res.exit_code == 0, res.output
    from planner.store import open_store
    from planner.store.rtt import rtt_summary

    s = rtt_summary(open_store(), vantage="ci")
    assert s.iloc[0].region_id == "local-box" and s.iloc[0].n == 5
    assert runner.invoke(cli, ["regions", "add", "local-box", "x.example:443"]).exit_code == 2
    assert runner.invoke(cli, ["regions", "add", "mine"]).exit_code == 2  # not a catalog id, no target
    assert runner.invoke(cli, ["regions", "remove", "local-box"]).exit_code == 0
    res = runner.invoke(cli, ["regions", "remove", "local-box"])
    assert res.exit_code == 2 and "no RTT target" in res.output
