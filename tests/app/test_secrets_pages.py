"""The secrets sweep on the pages (issue 42; the command line's, the store's and the worker's is
tests/planner/test_secrets_sweep.py): the Sources and Endpoints pages, with a database URL carrying its password as
`?password=` and with an unencoded `@` (Test and Sync now fail on them), a source kept by an older version with a URL
for its variable's name, a secret typed into each page's variable box, and an API key a real local server echoed
JSON-escaped into a probe's error detail. Everything the pages send to the browser holds none of them, in any
encoding; a source named like a URL is never a link in the receiver's caption."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import time

import sqlalchemy as sa

from planner.endpoints.registry import add_endpoint
from planner.endpoints.samples import SampleKind
from planner.probes.ttft import ProbeTarget, probe_once
from planner.store import open_store
from planner.store.probes import insert_samples, sample_row
from planner.store.sources import SourceKind, add_source
from planner.store.worker import upsert_statuses
from tests.app.conftest import open_page
from tests.support.page_text import every_text
from tests.support.secret_forms import leaks
from tests.support.servers import Script, ScriptedServer, Step

KEY = "sk-pages/Key+7=0123456789abcdefQRS"
DSN_PASSWORDS = ["PgQuery5b8d2e4f", "PgAt7f3e9a1c"]
TYPED = "postgresql://reader:PgTyped3c4d5e6f@db.internal/litellm"  # typed into a variable's name box
OLD_REF = "postgresql://reader:PgOldRow1a2b3c4d@db.internal/litellm"  # kept by an older version as the name


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again: nothing listens there


def _echo(_i, request) -> Script:
    key = request.headers.get("authorization", "").removeprefix("Bearer ")
    body = json.dumps({"error": f"Incorrect API key provided: {key}"}).replace("/", "\\/").encode()
    return Script(status=401, reason="Unauthorized", headers={"Content-Type": "application/json"}, steps=[Step(body)])


def _plain(markdown: str) -> str:
    """Markdown as it reads: without the backslashes md_text escapes with."""
    return re.sub(r"\\(.)", r"\1", markdown)


def _assert_no_secret(at) -> None:
    text = every_text(at)
    assert at.title[0].value in text  # the walk reached the page
    found = leaks(text, [KEY, *DSN_PASSWORDS, TYPED, "PgTyped3c4d5e6f", OLD_REF, "PgOldRow1a2b3c4d"])
    assert not found, found


def test_the_sources_page_shows_no_database_password_and_links_no_source_name(monkeypatch):
    port = _dead_port()
    monkeypatch.setenv("PAGES_DSN_QUERY", f"postgresql://reader@127.0.0.1:{port}/litellm?password={DSN_PASSWORDS[0]}")
    monkeypatch.setenv("PAGES_DSN_AT", f"postgresql://reader:pw@{DSN_PASSWORDS[1]}@127.0.0.1:{port}/litellm")
    eng = open_store()
    ids = [
        add_source(eng, name, SourceKind.LITELLM, var)
        for name, var in (("q", "PAGES_DSN_QUERY"), ("at", "PAGES_DSN_AT"))
    ]
    add_source(eng, "https://evil.example/steal?x=1", SourceKind.OTLP, "OTLP_TOKEN")
    with eng.begin() as conn:  # a row an older version kept with a URL for its variable's name
        conn.execute(
            sa.text(
                "INSERT INTO source (name, kind, secret_ref, created_at_ms, n_requests) "
                "VALUES ('old', 'litellm', :s, 0, 0)"
            ),
            {"s": OLD_REF},
        )
    at = open_page("sources")
    for sid in ids:
        for action in ("test", "sync"):
            at.button(key=f"sources_{action}_{sid}").click().run()
            assert not at.exception, [e.value for e in at.exception]
            assert at.error, "the failure is said"
    said = _plain(every_text(at))  # the driver's message, with the piece of the password it quotes masked
    assert "failed to resolve host '***@127.0.0.1'" in said and "port" in said and "Connection refused" in said
    at.text_input(key="sources_add_name").input("typed")
    at.text_input(key="sources_add_var").input(TYPED)
    next(b for b in at.button if b.label == "Add source").click().run()
    assert any("not its value" in e.value for e in at.error) and at.text_input(key="sources_add_var").value == ""
    _assert_no_secret(at)
    [caption] = [c.value for c in at.caption if "sources receive" in c.value]
    outside_code = re.sub(r"`[^`]*`", "", caption)
    assert "evil.example" in caption and "evil.example" not in outside_code, caption  # code, never a link


def test_the_endpoints_page_shows_no_echoed_or_typed_key(monkeypatch):
    monkeypatch.setenv("PAGES_KEY", KEY)
    eng = open_store()
    with ScriptedServer(_echo) as srv:
        ep = add_endpoint(eng, {"name": "echo", "base_url": srv.url, "model": "m", "api_key_env": "PAGES_KEY"})
        sample = asyncio.run(probe_once(ProbeTarget(base_url=srv.url, model="m"), api_key=KEY, max_attempts=1))
    assert sample.error_class == "auth"
    insert_samples(eng, [sample_row(sample, ep.id, "", SampleKind.SCHEDULED, sample.started_at_ms)])
    now_ms = int(time.time() * 1000)
    upsert_statuses(
        eng, "", {ep.id: {"state": "failing", "detail": sample.error_detail, "consecutive_failures": 5}}, now_ms
    )
    old = add_endpoint(eng, {"name": "aaa-old", "base_url": "https://api.example.com/v1", "model": "m"})
    with eng.begin() as conn:  # a key an older version kept, unchecked, where its variable's name goes
        conn.execute(sa.text("UPDATE endpoint SET api_key_env = :k WHERE id = :i"), {"k": KEY, "i": old.id})
    at = open_page("endpoints")
    assert at.selectbox(key="edit_pick").value == "aaa-old"  # its edit form is drawn, the key box empty
    assert any("5 failures in a row" in w.value and "***" in _plain(w.value) for w in at.warning), at.warning
    at.text_input(key="add_name").set_value("typed")
    at.text_input(key="add_base_url").set_value("https://api.example.com/v1")
    at.text_input(key="add_model").set_value("m")
    at.text_input(key="add_key").set_value(KEY)
    next(b for b in at.button if b.label == "Add endpoint").click().run()
    assert not at.exception
    assert any("not its value" in e.value for e in at.error) and at.text_input(key="add_key").value == ""
    _assert_no_secret(at)
