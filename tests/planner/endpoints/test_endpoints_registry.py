"""The endpoint registry: validation with the field named, TOML round trip, the simulated endpoint, and the CLI."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from planner.cli import cli
from planner.endpoints.registry import (
    EndpointError,
    add_endpoint,
    edit_endpoint,
    ensure_simulated_endpoint,
    export_toml,
    get_endpoint,
    import_toml,
    key_status,
    list_endpoints,
    min_interval_s,
    remove_endpoint,
)

OK = {"name": "acme", "base_url": "https://api.acme.example/v1", "model": "m"}


@pytest.mark.parametrize(
    "changes, field, words",
    [
        ({"base_url": "ftp://x.example/v1"}, "base_url", "http://"),
        ({"base_url": "https:///v1"}, "base_url", "no host"),
        ({"base_url": "https://user:pw@x.example/v1"}, "base_url", "credentials"),
        ({"interval_s": 5}, "interval_s", "at least 10"),
        ({"interval_s": 60, "timeout_s": 60}, "timeout_s", "shorter than"),
        ({"api_key_env": "sk-live-1234"}, "api_key_env", "NAME"),
        ({"protocol": "grpc"}, "protocol", "openai-chat"),
        ({"prompt_tokens": 0}, "prompt_tokens", "from 1 to 2,000,000 tokens, got 0"),
        ({"colour": "red"}, "colour", "unknown field"),
        ({"model": ""}, "model", "required"),
    ],
)
def test_bad_input_names_the_field(sqlite_engine, changes, field, words):
    # Validation runs before the database (one back end is enough; the store's own limits are tested on both).
    with pytest.raises(EndpointError) as err:
        add_endpoint(sqlite_engine, OK | changes)
    assert err.value.field == field and words in str(err.value)
    assert list_endpoints(sqlite_engine) == []


def test_duplicate_names_are_refused_on_add_and_rename(engine):
    add_endpoint(engine, OK)
    add_endpoint(engine, OK | {"name": "other"})
    with pytest.raises(EndpointError, match="already exists"):
        add_endpoint(engine, OK | {"base_url": "https://elsewhere.example"})
    with pytest.raises(EndpointError, match="already exists"):
        edit_endpoint(engine, "other", {"name": "acme"})
    assert get_endpoint(engine, "acme").base_url == "https://api.acme.example/v1"


def test_interval_minimum_is_ten_seconds_unless_lowered_for_tests(monkeypatch):
    monkeypatch.delenv("TTFT_PLANNER_MIN_INTERVAL_S", raising=False)
    assert min_interval_s() == 10.0
    monkeypatch.setenv("TTFT_PLANNER_MIN_INTERVAL_S", "0.01")
    assert min_interval_s() == 0.2  # never below the absolute floor


def test_key_status_reads_the_named_variable_only():
    from planner.store.endpoints import EndpointRow

    row = EndpointRow(name="x", base_url="https://x", model="m", api_key_env="X_KEY", created_at_ms=0, updated_at_ms=0)
    assert key_status(row, {}) == "key missing"
    assert key_status(row, {"X_KEY": "v"}) == "key set"
    row.api_key_env = ""
    assert key_status(row, {}) == "no key needed"


def test_toml_export_import_round_trip_and_partial_rejection(engine, sqlite_store_url):
    from planner.store import open_store

    add_endpoint(engine, OK | {"api_key_env": "ACME_KEY", "scale_down_window_s": 300, "vantage": "office"})
    add_endpoint(engine, OK | {"name": "b", "interval_s": 120, "enabled": False})
    ensure_simulated_endpoint(engine, "http://127.0.0.1:5555/v1")  # not first run: nothing added
    text = export_toml(engine)
    assert "ACME_KEY" in text and "[[endpoint]]" in text
    other = open_store(sqlite_store_url.replace("planner.db", "other.db"))
    bad = text + '\n[[endpoint]]\nname = "broken"\nbase_url = "gopher://x"\nmodel = "m"\n'
    res = import_toml(other, bad)
    assert sorted(res.added) == ["acme", "b"] and res.rejected[0][1] == "broken" and "base_url" in res.rejected[0][2]
    a = get_endpoint(other, "acme")
    assert (a.api_key_env, a.scale_down_window_s, a.vantage) == ("ACME_KEY", 300.0, "office")
    assert get_endpoint(other, "b").enabled is False
    res = import_toml(other, text.replace("interval_s = 120.0", "interval_s = 180.0"))
    assert sorted(res.updated) == ["acme", "b"] and get_endpoint(other, "b").interval_s == 180.0
    with pytest.raises(EndpointError, match="not valid TOML"):
        import_toml(other, "[[endpoint]\n")


def test_simulated_endpoint_registered_on_first_run_and_repointed_later(engine):
    row = ensure_simulated_endpoint(engine, "http://127.0.0.1:4000/v1")
    assert row.simulated and row.name == "simulated" and row.scale_down_window_s == 300.0
    again = ensure_simulated_endpoint(engine, "http://127.0.0.1:4001/v1")
    assert again.id == row.id and again.base_url == "http://127.0.0.1:4001/v1"
    assert len(list_endpoints(engine)) == 1
    assert "simulated" not in export_toml(engine)  # its URL is local and changes every run
    remove_endpoint(engine, "simulated")
    add_endpoint(engine, OK)
    assert ensure_simulated_endpoint(engine, "http://127.0.0.1:4002/v1") is None  # removed on purpose: stays removed


def test_cli_add_list_edit_export_import_remove(sqlite_store_url, tmp_path, monkeypatch):
    monkeypatch.delenv("ACME_CLI_KEY", raising=False)
    r = CliRunner()
    db = ["--database-url", sqlite_store_url]
    out = r.invoke(
        cli,
        [
            "endpoints",
            "add",
            "acme",
            "--base-url",
            "https://api.acme.example/v1",
            "--model",
            "m",
            "--api-key-env",
            "ACME_CLI_KEY",
            "--interval-s",
            "30",
            "--timeout-s",
            "10",
            *db,
        ],
    )
    assert out.exit_code == 0 and "key missing" in out.output
    bad = r.invoke(cli, ["endpoints", "add", "x", "--base-url", "ftp://x", "--model", "m", *db])
    assert bad.exit_code == 2 and "--base-url" in bad.output and "http://" in bad.output
    dup = r.invoke(cli, ["endpoints", "add", "acme", "--base-url", "https://x.example", "--model", "m", *db])
    assert dup.exit_code == 2 and "already exists" in dup.output
    assert r.invoke(cli, ["endpoints", "edit", "acme", "--interval-s", "45", *db]).exit_code == 0
    listed = r.invoke(cli, ["endpoints", "list", *db])
    assert "acme" in listed.output and "every 45 s" in listed.output and "key missing" in listed.output
    path = tmp_path / "endpoints.toml"
    assert r.invoke(cli, ["endpoints", "export", "-o", str(path), *db]).exit_code == 0
    assert r.invoke(cli, ["endpoints", "remove", "acme", "--yes", *db]).exit_code == 0
    assert r.invoke(cli, ["endpoints", "list", *db]).output.startswith("no endpoints yet")
    imp = r.invoke(cli, ["endpoints", "import", str(path), *db])
    assert imp.exit_code == 0 and "added 1" in imp.output
    missing = r.invoke(cli, ["endpoints", "remove", "nope", "--yes", *db])
    assert missing.exit_code == 2 and "no endpoint named 'nope'" in missing.output
    nofile = r.invoke(cli, ["endpoints", "import", str(tmp_path / "absent.toml"), *db])
    assert nofile.exit_code == 2 and "cannot read" in nofile.output


def test_cli_cold_reading_refuses_without_an_idle_time_or_window(sqlite_store_url):
    r = CliRunner()
    db = ["--database-url", sqlite_store_url]
    r.invoke(cli, ["endpoints", "add", "nowin", "--base-url", "https://x.example/v1", "--model", "m", *db])
    out = r.invoke(cli, ["cold-reading", "nowin", *db])
    assert out.exit_code == 2 and "--idle" in out.output
    out = r.invoke(cli, ["cold-reading", "ghost", "--idle-s", "5", *db])
    assert out.exit_code == 2 and "no endpoint named" in out.output
    out = r.invoke(cli, ["cold-reading", "nowin", "--idle-s", "5", "--no-wait", *db])
    assert out.exit_code == 0 and "queued cold reading" in out.output and "no worker is running" in out.output


def test_a_vertex_endpoint_without_google_auth_says_its_key_is_missing():
    import importlib.util

    from planner.endpoints.registry import key_status_for

    # the project does not install google-auth (an optional extra): ADC cannot be read, so nothing would sign
    assert importlib.util.find_spec("google") is None or importlib.util.find_spec("google.auth") is None
    status = key_status_for("", "vertex")
    assert status.startswith("key missing") and "pip install google-auth" in status
    assert key_status_for("", "bedrock") == "AWS credential chain"
