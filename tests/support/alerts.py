"""Alert test helpers: a local webhook receiver, a slow endpoint with a firing p95 rule, and the CLI in-process."""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from aiosmtpd.controller import Controller
from click.testing import CliRunner
from sqlalchemy.engine import Engine

from planner.alerts.rules import AlertKind, Rule
from planner.cli import cli
from planner.settings import DATABASE_URL
from planner.store import alerts as store
from tests.support.compare_seed import seed_endpoint
from tests.support.rtt_target import free_port

__all__ = ["Mailbox", "Receiver", "alert_receivers", "run_cli", "slow_endpoint_with_rule"]


class Receiver:
    """A local webhook receiver: records each JSON body; answers 500 to the first `fail_first` posts. With
    `hold_first`, the first post is held until `release` is set (its sender stays mid-send for as long as a test
    needs); `holding` is set once it has arrived."""

    def __init__(self, fail_first: int = 0, *, hold_first: bool = False, hang_s: float = 60.0) -> None:
        self.bodies: list[dict] = []
        self.posts = 0
        self.holding, self.release = threading.Event(), threading.Event()
        lock, outer = threading.Lock(), self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with lock:
                    outer.posts += 1
                    failing = outer.posts <= fail_first
                    first = outer.posts == 1
                    if not failing:
                        outer.bodies.append(json.loads(body))
                if first and hold_first:
                    outer.holding.set()
                    outer.release.wait(hang_s)
                self.send_response(500 if failing else 200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hooks/T000/B000/secret-token"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()


def slow_endpoint_with_rule(engine: Engine, now_ms: int, *, webhook_env: str = "TEAM_HOOK", **rule) -> None:
    """Endpoint "slow-b" with 30 samples around 900 ms in the last 10 minutes (default vantage), and a p95 > 500 ms
    rule over 15 minutes that fires at once (for 0 s, min n 20); `rule` overrides Rule fields."""
    seed_endpoint(engine, "slow-b", median_ms=900, n=30, start_ms=now_ms - 600_000, span_ms=590_000, vantage="")
    fields = {
        "name": "p95",
        "kind": AlertKind.P95_OVER,
        "threshold": 500,
        "window_s": 900,
        "for_s": 0,
        "min_n": 20,
        "webhook_env": webhook_env,
        **rule,
    }
    store.add_rule(engine, Rule(**fields), now_ms)


def run_cli(db_url: str, *args: str) -> subprocess.CompletedProcess:
    """`ttft-planner ARGS` over the store at db_url, run in-process by Click's runner (no interpreter start per
    call: what these tests check is the commands' output and exit status, not the process); stdout and stderr
    apart, as a user's terminal shows them."""
    result = CliRunner().invoke(
        cli, list(args), env={DATABASE_URL.name: db_url}, prog_name="ttft-planner", catch_exceptions=False
    )
    return subprocess.CompletedProcess(["ttft-planner", *args], result.exit_code, result.stdout, result.stderr)


class Mailbox:
    """An aiosmtpd handler keeping every message it receives (as text)."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 - aiosmtpd's hook name
        self.messages.append(envelope.content.decode("utf-8", "replace"))
        return "250 OK"


@contextlib.contextmanager
def alert_receivers(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Receiver, Mailbox]]:
    """A webhook receiver (its URL in $TEAM_HOOK) and a real local SMTP server (the planner's SMTP settings point at
    it) for the block."""
    hook, box = Receiver(), Mailbox()
    smtp = Controller(box, hostname="127.0.0.1", port=free_port())
    smtp.start()
    monkeypatch.setenv("TEAM_HOOK", hook.url)
    monkeypatch.setenv("TTFT_PLANNER_SMTP_HOST", "127.0.0.1")
    monkeypatch.setenv("TTFT_PLANNER_SMTP_PORT", str(smtp.port))
    try:
        yield hook, box
    finally:
        smtp.stop()
        hook.close()
