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
from planner.endpoints import add_endpoint
from planner.samples import SAMPLE_SQL
from planner.store import alerts as alert_store
from planner.store import open_store
from tests.support.alerts import Receiver
from tests.support.rtt_target import free_port
from tests.support.servers import Script, ScriptedServer, Step, chat_chunk, sse, usage_chunk
from tests.support.worker_proc import spawn_worker, stop_worker

ROOT = Path(__file__).resolve().parents[2]
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


def test_worker_metrics_count_the_stored_samples_and_it_fires_the_alert(tmp_path, monkeypatch):
    monkeypatch.setenv("TTFT_PLANNER_MIN_INTERVAL_S", "0.2")
    db_url = f"sqlite:///{tmp_path / 'team.db'}"
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
        proc = spawn_worker(tmp_path / "worker.log", *args, env={**env, "TTFT_PLANNER_DATABASE_URL": db_url})
        try:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline and not hook.bodies:
                time.sleep(0.3)
            assert [b["status"] for b in hook.bodies] == ["firing"], (tmp_path / "worker.log").read_text()[-2000:]
            assert hook.bodies[0]["endpoint"] == "slow-a" and hook.bodies[0]["n"] >= 5
            # exact: a scrape taken between two equal store counts must equal them
            for _ in range(100):
                before = _stored(engine)
                scraped = _ttft_count(port)
                if before == _stored(engine) and scraped is not None:
                    break
                time.sleep(0.05)
            assert scraped == before > 0
        finally:
            stop_worker(proc, 30)
            hook.close()
    assert len(hook.bodies) == 1  # held firing: no second notification
