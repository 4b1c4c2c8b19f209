"""The secrets sweep (issue 42): every secret form pasted in every place a user can type one, and every place a
server can echo one, then a search for each secret — as written and in every encoding (tests/support/secret_forms)
— in the store file's bytes and every table, the command line's stdout and stderr, the worker's log, its /metrics,
and the exports (`endpoints export`, the report's Markdown). None may be found.

The forms: a LiteLLM database URL with its password in the userinfo, as `?password=`, as `?sslpassword=`, holding an
unencoded `@`; an API key a real local server echoes raw, JSON-escaped (`\\/`, `\\uXXXX`), URL-encoded and in base64
(alone and as a Basic `user:key`); a database URL, a bearer token, a GitHub token, an API key and a webhook URL pasted
where a variable's NAME goes (`sources add`, `endpoints add`, `probe`, `alerts add`). The pages' own sweep is
tests/app/test_secrets_pages.py.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import socket
import sqlite3
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from click.testing import CliRunner

from planner.cli import cli
from planner.endpoints.registry import get_endpoint
from planner.store import open_store
from planner.store.requests import create_request, get_request
from planner.worker.source_syncs import SourceSyncs
from tests.support.fake_clock import FakeClock
from tests.support.secret_forms import leaks
from tests.support.servers import Script, ScriptedServer, Step
from tests.support.worker_driver import drive, until

API_KEY = "sk-sweep/Key+9=0123456789abcdefXYZ"
BEARER = "Bearer sk-sweep-token-5c6d7e8f9a0b"
GITHUB = "ghp_" + "Sw33pT0k3nA1b2C3d4E5f6G7h8I9j0K1l2M3"
WEBHOOK = "https://hooks.slack.com/services/T0SWEEP/B0SWEEP/sweepWebhookToken42"
PASTED = [BEARER, GITHUB, WEBHOOK, API_KEY]  # each typed where a variable's NAME goes

#: What a server does with the key it was sent: written back into its 401 body.
ECHOES = [
    lambda k: f'{{"error":"invalid key {k}"}}',
    lambda k: json.dumps({"error": f"Incorrect API key provided: {k}"}).replace("/", "\\/"),
    lambda k: '{"error":"' + "".join(f"\\u{ord(c):04x}" for c in k) + '"}',
    lambda k: "error=invalid&key=" + quote(k, safe=""),
    lambda k: "denied: Basic " + base64.b64encode(f"apikey:{k}".encode()).decode(),
    lambda k: '{"k":"' + base64.b64encode(k.encode()).decode() + '"}',
]


def _echo(i: int, request) -> Script:
    key = request.headers.get("authorization", "").removeprefix("Bearer ")
    body = ECHOES[i % len(ECHOES)](key).encode()
    return Script(status=401, reason="Unauthorized", headers={"Content-Type": "application/json"}, steps=[Step(body)])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _store_text(url: str) -> str:
    """The store as bytes (the file and its WAL, decoded leniently) and as every table's rows."""
    path = Path(url.removeprefix("sqlite:///"))
    raw = "".join(p.read_bytes().decode("latin-1") for p in path.parent.glob(path.name + "*") if p.is_file())
    with sqlite3.connect(path) as conn:
        dump = "\n".join(conn.iterdump())
    return raw + "\n" + dump


def _cli(out: list[str], *args: str, store: str, code: int | None = None):
    res = CliRunner().invoke(cli, [*args, "--database-url", store])
    out.append(res.output)  # stdout and stderr together (click's runner mixes them)
    if code is not None:
        assert res.exit_code == code, (args, res.output)
    return res


def test_no_key_echoed_or_pasted_reaches_the_store_output_log_metrics_or_exports(
    sqlite_store_url, monkeypatch, tmp_path, caplog
):
    store, out = sqlite_store_url, []
    monkeypatch.setenv("SWEEP_KEY", API_KEY)
    with ScriptedServer(_echo) as srv:
        # a secret typed where a variable's name goes, everywhere one can be typed
        for option, value in (("--litellm-dsn-env", WEBHOOK), ("--otlp-token-env", BEARER)):
            _cli(out, "sources", "add", "pasted", option, value, store=store, code=2)
        prom = ["sources", "add", "prom", "--prometheus-url", "http://prometheus:9090"]
        _cli(out, *prom, "--prometheus-token-env", GITHUB, store=store, code=2)
        for value in PASTED:
            _cli(
                out, "endpoints", "add", "p", "--base-url", srv.url, "--model", "m", "--api-key-env", value, store=store
            )
            _cli(out, "probe", "--base-url", srv.url, "--model", "m", "--api-key-env", value, "--store", store=store)
            rule = ["alerts", "add", "slow", "--kind", "p95_over", "--threshold", "900", "--webhook-env", value]
            _cli(out, *rule, store=store, code=2)
        assert all("NAME of an environment variable" in o for o in out), out
        # the key where it belongs, echoed back by the server in every encoding: the command line and the worker
        echo_args = ["endpoints", "add", "echo", "--base-url", srv.url, "--model", "m", "--api-key-env", "SWEEP_KEY"]
        _cli(out, *echo_args, "--timeout-s", "9", store=store, code=0)
        args = ["probe", "--base-url", srv.url, "--model", "m", "-n", str(len(ECHOES)), "--interval-s", "0"]
        _cli(out, *args, "--api-key-env", "SWEEP_KEY", "--store", store=store, code=1)  # every sample failed
        assert out[-1].count("FAILED auth") == len(ECHOES), out[-1]
        engine = open_store(store)
        echo = get_endpoint(engine, "echo")
        requests = [create_request(engine, echo.id, "probe_now") for _ in range(2)]
        port = _free_port()

        def scraped() -> str | None:  # /metrics once it counts both requested probes' failures
            text = httpx.get(f"http://127.0.0.1:{port}/metrics").text
            return text if re.search(r'outcome="auth"[^}]*\} 2\.0', text) else None

        async def body(_worker):  # the clock stands still: only the requested probes run
            done = lambda: all(get_request(engine, r)["status"] in ("done", "failed") for r in requests)  # noqa: E731
            await until(done, "the requested probes", in_thread=True)
            return await until(scraped, "both failures stored and counted", in_thread=True)

        with caplog.at_level(logging.DEBUG):
            metrics = drive(engine, body, clock=FakeClock(), metrics_port=port)
    assert "SWEEP_KEY" in _cli(out, "endpoints", "export", store=store, code=0).output  # names, never values
    report = ["report", "--endpoints", "echo", "--out", str(tmp_path / "r.html"), "--markdown", str(tmp_path / "r.md")]
    _cli(out, *report, store=store, code=0)
    exports = "".join(p.read_text() for p in tmp_path.glob("r.*"))
    stored = _store_text(store)
    assert stored.count("***") >= len(ECHOES) + 2, "each echoed key was masked, not dropped"
    for where, text in {
        "CLI": "\n".join(out),
        "store": stored,
        "worker log": caplog.text,
        "/metrics": metrics,
        "exports": exports,
    }.items():
        assert not leaks(text, [API_KEY, *PASTED]), where


@pytest.mark.postgres
def test_no_database_password_form_reaches_the_store_output_or_the_worker_log(
    sqlite_store_url, pg_url, monkeypatch, caplog
):
    base = pg_url.replace("postgresql+psycopg://", "postgresql://")  # an empty database: no LiteLLM table in it
    user_host, db = base.removeprefix("postgresql://").split("/", 1)
    user, host = user_host.split("@")
    dsns = {
        "SWEEP_DSN_USERINFO": (f"postgresql://{user}:SwUserinfo8c1d@{host}/{db}", "SwUserinfo8c1d"),
        "SWEEP_DSN_QUERY": (f"{base}?password=SwQuery4e2f", "SwQuery4e2f"),
        "SWEEP_DSN_SSL": (f"{base}?sslpassword=SwSsl6a7b", "SwSsl6a7b"),
        "SWEEP_DSN_AT": (f"postgresql://{user}:pw@SwAt9f3e1a@{host}/{db}", "SwAt9f3e1a"),
    }
    store, out = sqlite_store_url, []
    for var, (dsn, _secret) in dsns.items():
        monkeypatch.setenv(var, dsn)
        name = var.lower().replace("_", "-")
        _cli(out, "sources", "add", name, "--litellm-dsn-env", var, store=store, code=0)
        _cli(out, "sources", "add", f"{name}-pasted", "--litellm-dsn-env", dsn, store=store, code=2)
        _cli(out, "sources", "test", name, store=store, code=1)
        _cli(out, "sources", "sync", name, store=store, code=1)
    with caplog.at_level(logging.DEBUG):
        SourceSyncs(open_store(store), every_s=60, now_ms=lambda: 0, holds_lease=lambda: True).sync_all()
    _cli(out, "sources", "list", store=store, code=0)
    _cli(out, "sources", "list", "--json", store=store, code=0)
    assert sum("error:" in o for o in out[-2:]) == 1 and "sync failed" in caplog.text
    secrets = [s for _dsn, s in dsns.values()] + [d for d, _s in dsns.values()]
    for where, text in {"CLI": "\n".join(out), "store": _store_text(store), "worker log": caplog.text}.items():
        assert not leaks(text, secrets), where
