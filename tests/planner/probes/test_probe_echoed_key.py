"""An endpoint whose error body echoes the API key it was sent — JSON-escaped (`/` as `\\/`, as PHP's json_encode
writes it; or every character as `\\uXXXX`), URL-encoded, as a Basic credential, in base64, or cut mid-key by the
probe's 2,048-byte limit — never gets it printed by `probe`, stored in a sample's error_detail, or kept by the
worker. A real local HTTP server reads the key from the request and writes it back."""

from __future__ import annotations

import asyncio
import base64
import json
import re
from urllib.parse import quote, quote_plus

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from planner.cli import cli
from planner.endpoints.registry import add_endpoint
from planner.probes.ttft import ProbeTarget, probe_once
from planner.store.requests import create_request, get_request
from tests.support.fake_clock import FakeClock
from tests.support.secret_forms import leaks
from tests.support.servers import Script, ScriptedServer, Step
from tests.support.worker_driver import drive, until

KEY_ENV = "TTFT_TEST_ECHOED_KEY"
KEY = "sk-proj/Echo+Key=0123456789abcdefXYZ"  # / + = : every encoding below writes it differently


def _json_slashes(text: str) -> str:
    return json.dumps(text).replace("/", "\\/")


#: How a server writes the key it got back into its error body.
ECHOES = {
    "json, / as \\/": lambda k: '{"error":{"message":"Incorrect API key provided: ' + _json_slashes(k)[1:-1] + '"}}',
    "json, \\u escapes": lambda k: '{"error":"bad key ' + "".join(f"\\u{ord(c):04X}" for c in k) + '"}',
    "url-encoded": lambda k: "error=invalid_key&key=" + quote(k, safe=""),
    "url-encoded, lower hex": lambda k: (
        "error=invalid_key&key=" + re.sub("%..", lambda m: m.group().lower(), quote(k, safe=""))
    ),
    "form-encoded": lambda k: "error=invalid_key&key=" + quote_plus(k),
    "basic user:key": lambda k: "denied: Authorization: Basic " + base64.b64encode(f"apikey:{k}".encode()).decode(),
    "basic :key": lambda k: '{"auth":"Basic ' + base64.b64encode(f":{k}".encode()).decode() + '"}',
    "base64 key": lambda k: '{"token_b64":"' + base64.urlsafe_b64encode(k.encode()).decode().rstrip("=") + '"}',
    # padded (with spaces, which the detail folds to one) so that the probe's 2,048-byte cut falls 12 characters
    # into the escaped key
    "json, cut mid-key": lambda k: '{"error":"' + " " * (2048 - 10 - 12) + _json_slashes(k)[1:-1] + '"}',
}


def _echoing(encoding: str):
    """A server script: 401 with the key from the request's Authorization header written back as `encoding`."""

    def script(_i, request) -> Script:
        key = request.headers.get("authorization", "").removeprefix("Bearer ")
        body = ECHOES[encoding](key).encode()
        return Script(
            status=401, reason="Unauthorized", headers={"Content-Type": "application/json"}, steps=[Step(body)]
        )

    return script


@pytest.mark.parametrize("encoding", list(ECHOES))
def test_probe_once_masks_the_key_the_server_echoes(encoding):
    with ScriptedServer(_echoing(encoding)) as srv:
        sample = asyncio.run(probe_once(ProbeTarget(base_url=srv.url, model="m"), api_key=KEY, max_attempts=1))
        assert srv.requests[0].headers["authorization"] == f"Bearer {KEY}"  # the key went to the server, only there
    assert sample.error_class == "auth" and sample.status_code == 401
    assert "***" in sample.error_detail
    assert not leaks(json.dumps(sample.to_dict()), [KEY]), sample.error_detail


def test_the_probe_command_prints_and_stores_no_echoed_key(sqlite_store_url, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    out = []
    for encoding in ("json, / as \\/", "basic user:key", "json, cut mid-key"):
        with ScriptedServer(_echoing(encoding)) as srv:
            args = ["probe", "--base-url", srv.url, "--model", "m", "-n", "1", "--api-key-env", KEY_ENV]
            res = CliRunner().invoke(cli, [*args, "--store", "--database-url", sqlite_store_url])
        assert "FAILED auth" in res.output, res.output
        out.append(res.output)
    with sa.create_engine(sqlite_store_url).connect() as conn:
        details = [r[0] for r in conn.execute(sa.text("SELECT error_detail FROM probe_sample"))]
    assert len(details) == 3 and all("***" in d for d in details)
    assert not leaks("\n".join(out + details), [KEY]), out


def test_a_worker_stored_sample_keeps_no_echoed_key(sqlite_engine, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    with ScriptedServer(_echoing("json, / as \\/")) as srv:
        e = add_endpoint(
            sqlite_engine,
            {"name": "echoes", "base_url": srv.url, "model": "m", "api_key_env": KEY_ENV, "timeout_s": 9.0},
        )
        rid = create_request(sqlite_engine, e.id, "probe_now")

        async def body(_worker):  # the clock stands still: only the requested probe runs
            await until(
                lambda: get_request(sqlite_engine, rid)["status"] in ("done", "failed"), "the probe", in_thread=True
            )

        drive(sqlite_engine, body, clock=FakeClock())
    with sqlite_engine.connect() as conn:
        [detail] = [r[0] for r in conn.execute(sa.text("SELECT error_detail FROM probe_sample"))]
        dump = " ".join(
            str(v)
            for t in ("probe_sample", "probe_request", "endpoint_status")
            for r in conn.execute(sa.text(f"SELECT * FROM {t}"))
            for v in r
        )
    assert "401" in detail and "***" in detail
    assert not leaks(dump, [KEY]), detail
