"""A real worker process with a team's options: its /metrics (scraped and parsed with prometheus_client's parser)
counts exactly the samples in the store, and it evaluates the alert rules itself — a slow endpoint makes it post one
firing notification to a local webhook receiver."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import sqlalchemy as sa
from prometheus_client.parser import text_string_to_metric_families

from planner.alerts.rules import AlertKind, Rule
from planner.endpoints.registry import add_endpoint
from planner.endpoints.samples import SAMPLE_SQL
from planner.store import alerts as alert_store
from planner.store import open_store
from tests.support.alerts import Receiver
from tests.support.rtt_target import free_port
from tests.support.servers import Script, ScriptedServer, Step, chat_chunk, sse, usage_chunk
from tests.support.worker_proc import spawn_worker, stop_worker, wait_logged

ROOT = Path(__file__).resolve().parents[3]
SLOW = Script(
    steps=[
        Step(sse(chat_chunk({"role": "assistant", "content": ""}))),
        Step(sse(chat_chunk({"content": "w"})), delay_s=0.12, content=True),
        Step(sse(usage_chunk(40, 1)) + b"data: [DONE]\n\n"),
    ]
)


def _ttft_count(port: int) -> float | None:
    try:
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    except httpx.HTTPError:
        return None
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "ttft_planner_ttft_seconds_count" and s.labels.get("endpoint") == "slow-a":
                return s.value
    return 0.0


def _stored(engine) -> int:
    with engine.connect() as conn:
        return conn.execute(sa.text(f"SELECT COUNT(*) FROM probe_sample WHERE {SAMPLE_SQL}")).scalar()


def _scrape_between_equal_counts(engine, port: int) -> tuple[int, float] | None:
    """(store count, scraped count) when the store held the same count before and after the scrape, else None
    (a flush landed in between: try again)."""
    before = _stored(engine)
    scraped = _ttft_count(port)
    return (before, scraped) if scraped is not None and _stored(engine) == before else None


def _evaluated_while_firing(engine) -> int | None:
    """When the worker last evaluated the rule, if that pass came after the one that fired it (else None)."""
    series = alert_store.series_frame(engine)
    row = series[series["endpoint"] == "slow-a"].iloc[0]
    if row["state"] == "firing" and row["evaluated_at_ms"] > row["since_ms"]:
        return int(row["evaluated_at_ms"])
    return None


def test_worker_metrics_count_the_stored_samples_and_it_fires_the_alert(sqlite_store_url, tmp_path, monkeypatch):
    monkeypatch.setenv("TTFT_PLANNER_MIN_INTERVAL_S", "0.2")
    db_url = sqlite_store_url
    engine = open_store(db_url)
    hook = Receiver()
    port = free_port()
    with ScriptedServer(SLOW) as srv:
        add_endpoint(
            engine,
            {
                "name": "slow-a",
                "base_url": srv.url,
                "model": "m",
                "interval_s": 0.3,
                "timeout_s": 0.25,
                "prompt_tokens": 40,
                "max_tokens": 1,
            },
        )
        alert_store.add_rule(
            engine,
            Rule(
                name="inline p95",
                kind=AlertKind.P95_OVER,
                threshold=100.0,
                window_s=600,
                for_s=0,
                min_n=5,
                webhook_env="TEAM_HOOK",
            ),
            int(time.time() * 1000),
        )
        env = {"PYTHONPATH": str(ROOT), "TEAM_HOOK": hook.url}
        args = ("--metrics-port", str(port), "--alerts-every-s", "1", "--probe-processes", "0")
        log = tmp_path / "worker.log"
        proc = spawn_worker(log, *args, env={**env, "TTFT_PLANNER_DATABASE_URL": db_url})
        try:
            wait_logged(lambda: hook.bodies, "the alert's notification", log)
            assert [b["status"] for b in hook.bodies] == ["firing"], log.read_text()[-2000:]
            assert hook.bodies[0]["endpoint"] == "slow-a" and hook.bodies[0]["n"] >= 5
            # exact: a scrape taken between two equal store counts must equal them
            before, scraped = wait_logged(lambda: _scrape_between_equal_counts(engine, port), "a quiet scrape", log)
            assert scraped == before > 0
            # Two more alert passes while firing (the second starts after the first's deliveries are sent).
            passes: set[int] = set()

            def two_more_passes() -> bool:
                if (at_ms := _evaluated_while_firing(engine)) is not None:
                    passes.add(at_ms)
                return len(passes) >= 2

            wait_logged(two_more_passes, "two alert passes after the firing one", log)
        finally:
            stop_worker(proc)
            hook.close()
    assert len(hook.bodies) == 1  # held firing: no second notification
