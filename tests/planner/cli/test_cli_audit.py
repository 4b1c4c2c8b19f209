"""Issue 28 item 10: every write the CLI makes to endpoints, log uploads and RTT targets leaves one audit row, by
`cli:<OS user>`, naming the action and the object (as the page making the same write does), never a secret; a
refused write leaves none."""

from __future__ import annotations

import getpass

import pytest
from click.testing import CliRunner

from planner.cli import cli
from planner.store import open_store
from planner.store.audit import audit_log, cli_actor
from planner.team.roles import ACTIONS
from tests.support.cli_tree import write_tiny_log

#: `endpoints add` of an endpoint "eu" (its flags after).
ADD_EU = ["endpoints", "add", "eu", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]


@pytest.fixture
def store(sqlite_store_url):
    engine = open_store(sqlite_store_url)
    yield sqlite_store_url, engine
    engine.dispose()


def _run(url: str, *args: str, code: int = 0):
    res = CliRunner().invoke(cli, [*args, "--database-url", url])
    assert res.exit_code == code, res.output
    return res


def _rows(engine) -> list[dict]:
    return audit_log(engine).to_dict("records")[::-1]  # oldest first


def _one_new(engine, before: int) -> dict:
    rows = _rows(engine)
    assert len(rows) == before + 1, rows[before:]
    return rows[-1]


def test_every_cli_write_adds_one_audit_row_by_the_os_user(store, tmp_path, monkeypatch):
    url, engine = store
    monkeypatch.setenv("ACME_KEY", "sk-very-secret-123")
    me = f"cli:{getpass.getuser()}"
    doc = tmp_path / "endpoints.toml"
    doc.write_text(
        '[[endpoint]]\nname = "imp-a"\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
        '[[endpoint]]\nname = "imp-b"\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
    )
    log = write_tiny_log(tmp_path / "team.jsonl")
    steps = [
        (
            [*ADD_EU, "--api-key-env", "ACME_KEY"],
            ("endpoint.write", "eu", "created: openai-chat m"),
        ),
        (
            ["endpoints", "edit", "eu", "--interval-s", "120", "--rename", "eu-2"],
            ("endpoint.write", "eu-2", "changed: interval_s, name; renamed from eu"),
        ),
        (["endpoints", "remove", "eu-2", "--yes"], ("endpoint.write", "eu-2", "deleted with its samples")),
        (
            ["endpoints", "import", str(doc)],
            ("endpoint.write", "endpoints.toml", "imported: added 2 (imp-a, imp-b), updated 0 (-), rejected 0"),
        ),
        (["logs", "import", str(log), "--name", "team"], ("logs.upload", "team", "stored upload 1: 40 requests")),
        (["logs", "delete", "1"], ("logs.delete", "team", "deleted upload 1")),
        (
            ["regions", "add", "acme-eu", "https://eu.api.acme.dev/health", "--interval-s", "600"],
            ("region.write", "acme-eu", "added RTT target https://eu.api.acme.dev/health"),
        ),
        (["regions", "remove", "acme-eu"], ("region.write", "acme-eu", "removed RTT target")),
        (["alerts", "add", "slow", "--threshold", "500"], ("alert.write", "slow", "created: p95_over")),
        (["alerts", "remove", "slow"], ("alert.write", "slow", "deleted")),
    ]
    for args, (action, name, detail) in steps:
        before = len(_rows(engine))
        _run(url, *args)
        row = _one_new(engine, before)
        assert (row["actor"], row["role"], row["action"], row["object_name"]) == (me, "", action, name), args
        assert row["detail"].startswith(detail), (args, row["detail"])
        assert action in ACTIONS  # the Admin page words it
    assert all("sk-very-secret" not in str(v) for r in _rows(engine) for v in r.values())


def test_a_refused_or_empty_write_adds_no_audit_row(store, tmp_path):
    url, engine = store
    _run(url, *ADD_EU, "--interval-s", "inf", code=2)
    _run(url, "endpoints", "remove", "nope", "--yes", code=2)
    _run(url, "logs", "delete", "7", code=2)
    _run(url, "regions", "remove", "nope", code=2)
    bad = tmp_path / "bad.toml"
    bad.write_text('[[endpoint]]\nname = "x"\nbase_url = "ftp://h"\nmodel = "m"\n')
    _run(url, "endpoints", "import", str(bad), code=1)  # every record rejected: nothing was written
    assert _rows(engine) == []


def test_the_actor_is_the_uid_when_the_os_names_no_user(monkeypatch):
    def nobody() -> str:
        raise OSError("No username set in the environment")

    monkeypatch.setattr(getpass, "getuser", nobody)
    assert cli_actor().startswith("cli:uid ")
