"""Alerts on production p95 (issue 32): a rule over your users' requests to an endpoint, read by a live source.

On a temp SQLite store with source requests stored as a sync stores them, evaluate_all (at injected instants, never
the clock) keeps a series per endpoint under the vantage "production", holds it pending for the for-duration, fires
once with the production p95 and n, says nothing below min n, resolves below the clear level, and delivers its
webhook in plain words; a vantage's worker pass evaluates it too. The CLI adds and lists such a rule.
"""

from __future__ import annotations

import json

from planner.alerts.evaluate import evaluate_all
from planner.alerts.rules import PRODUCTION_VANTAGE, AlertKind, AlertState, Rule, build_rule
from planner.alerts.words import KIND_CHOICES, KIND_WHAT, condition, format_value
from planner.endpoints.registry import add_endpoint, get_endpoint
from planner.percentiles import summarize
from planner.store import alerts as store
from planner.store.sources import SourceKind, add_source, store_batch
from tests.support.alerts import Receiver, run_cli

T0 = 1_800_000_000_000  # a fixed instant (UTC epoch ms)
MIN = 60_000


def _requests(source_id: int, engine, start_ms: int, ttfts: list[float], *, base: str, model: str, tag: str) -> None:
    store_batch(
        engine,
        source_id,
        [
            {
                "request_id": f"{tag}-{i}",
                "ts_ms": start_ms + i * 10_000,
                "model": model,
                "api_base": base,
                "prompt_tokens": 500,
                "cached_tokens": 0,
                "output_tokens": 20,
                "ttft_ms": v,
                "duration_ms": v + 800,
            }
            for i, v in enumerate(ttfts)
        ],
        None,
    )


def _setup(engine) -> tuple[int, int, int]:
    """Endpoints "chat-eu" (mapped by the proxy's requests) and "batch" (no source sends to it), a LiteLLM source
    "prod-proxy" and a production p95 > 500 ms rule over every endpoint (15 min window, 2 min for, min n 20)."""
    chat = add_endpoint(engine, {"name": "chat-eu", "base_url": "https://api.example.com/v1", "model": "gpt-4o-mini"})
    add_endpoint(engine, {"name": "batch", "base_url": "https://batch.example.com/v1", "model": "gpt-4o-mini"})
    src = add_source(engine, "prod-proxy", SourceKind.LITELLM, "PROXY_DSN")
    rule_id = store.add_rule(
        engine,
        Rule(
            name="users p95",
            kind=AlertKind.PRODUCTION_P95_OVER,
            threshold=500.0,
            window_s=900,
            for_s=120,
            min_n=20,
            webhook_env="PROD_ALERT_HOOK",
        ),
        T0,
    )
    assert chat.id is not None
    return chat.id, src, rule_id


def test_a_production_rule_fires_once_after_its_for_duration_and_resolves_below_the_clear_level(
    sqlite_engine, monkeypatch
):
    engine = sqlite_engine
    hook = Receiver()
    monkeypatch.setenv("PROD_ALERT_HOOK", hook.url)
    try:
        chat_id, src, rule_id = _setup(engine)
        slow = [850.0 + 5 * i for i in range(30)]
        _requests(
            src, engine, T0 - 10 * MIN, slow, base="https://API.example.com/v1/", model="openai/gpt-4o-mini", tag="a"
        )
        # requests to another base URL, or of another model, never count: 30 fast ones would pull the p95 down
        _requests(
            src, engine, T0 - 10 * MIN, [10.0] * 30, base="https://eu.example.com/v1", model="gpt-4o-mini", tag="b"
        )
        _requests(src, engine, T0 - 10 * MIN, [10.0] * 30, base="https://api.example.com", model="gpt-4o", tag="c")

        first = evaluate_all(engine, T0)
        key = (rule_id, chat_id, PRODUCTION_VANTAGE)
        states = store.series_states(engine)
        assert set(states) == {key}  # "batch" gets no series: no source sends to it
        want = summarize(slow, (0.95,))["p95"].value
        assert states[key].state is AlertState.PENDING and states[key].value == want and states[key].n == 30
        assert first.transitions == []

        # 3 min later, from a vantage's worker (its pass takes the production series too): the breach held 2 min
        fired = evaluate_all(engine, T0 + 3 * MIN, vantage="eu-west")
        assert fired.transitions == [("users p95", "chat-eu", "firing")]
        assert store.series_states(engine)[key].state is AlertState.FIRING
        (event,) = store.alert_history(engine).itertuples()
        assert event.vantage == "production" and event.value == want and event.n == 30
        assert event.message.startswith(
            f"[FIRING] users p95: production p95 TTFT on chat-eu is over 500 ms: {want:,.0f} ms, n=30 over the last "
            "15 min."
        )
        assert fired.delivered == 1 and len(hook.bodies) == 1
        body = hook.bodies[0]
        assert (body["kind"], body["what"], body["vantage"], body["value"], body["n"]) == (
            "production_p95_over",
            "production p95 TTFT",
            "production",
            want,
            30,
        )
        assert evaluate_all(engine, T0 + 4 * MIN).transitions == []  # still over: no second notification

        # Later the slow requests have left the window and the new ones are fast: resolved, once.
        fast = [300.0 + i for i in range(25)]
        _requests(src, engine, T0 + 20 * MIN, fast, base="https://api.example.com", model="gpt-4o-mini", tag="d")
        resolved = evaluate_all(engine, T0 + 30 * MIN)
        assert resolved.transitions == [("users p95", "chat-eu", "resolved")]
        status = store.series_states(engine)[key]
        assert status.state is AlertState.OK and status.value == summarize(fast, (0.95,))["p95"].value
        assert [b["status"] for b in hook.bodies] == ["firing", "resolved"]
        assert "production p95 TTFT on chat-eu is back under 450 ms" in hook.bodies[1]["text"]
    finally:
        hook.close()


def test_fewer_requests_than_min_n_never_fire_and_a_rule_on_an_unmapped_endpoint_has_no_data(sqlite_engine):
    engine = sqlite_engine
    chat_id, src, rule_id = _setup(engine)
    _requests(
        src, engine, T0 - 5 * MIN, [5_000.0] * 19, base="https://api.example.com/v1", model="gpt-4o-mini", tag="a"
    )
    for minute in range(0, 10):
        assert evaluate_all(engine, T0 + minute * MIN, deliver=False).transitions == []
    status = store.series_states(engine)[(rule_id, chat_id, PRODUCTION_VANTAGE)]
    assert status.state is AlertState.OK and status.n == 19 and status.value == 5_000.0

    # A rule on the one endpoint no source sends to: its series is listed, with nothing to judge.
    batch = get_endpoint(engine, "batch").id
    assert batch is not None
    only = store.add_rule(
        engine,
        Rule(name="batch users", kind=AlertKind.PRODUCTION_P95_OVER, threshold=500.0, for_s=0, endpoint_id=batch),
        T0,
    )
    evaluate_all(engine, T0 + 11 * MIN, deliver=False)
    lone = store.series_states(engine)[(only, batch, PRODUCTION_VANTAGE)]
    assert lone.state is AlertState.OK and lone.value is None and lone.n == 0


def test_the_kind_reads_in_plain_words_and_takes_a_p95_target():
    kind = AlertKind.PRODUCTION_P95_OVER
    assert KIND_WHAT[kind] == "production p95 TTFT"
    assert KIND_CHOICES[kind].startswith("production p95 TTFT over a target (ms)")
    assert format_value(kind, 512.4) == "512 ms"
    rule = build_rule(
        "users",
        kind,
        threshold=None,
        window_min=15,
        for_min=5,
        min_n=20,
        interaction="chat",
        targets_ms={"chat": 800.0},
    )
    assert (rule.threshold, rule.unit) == (800.0, "ms")
    assert condition(rule) == "production p95 TTFT over 800 ms (Chat panel / single-file edit target)"


def test_the_cli_adds_and_lists_a_production_rule(sqlite_store_url, sqlite_engine):
    add_endpoint(sqlite_engine, {"name": "chat-eu", "base_url": "https://api.example.com/v1", "model": "m"})
    out = run_cli(
        sqlite_store_url,
        "alerts",
        "add",
        "users p95",
        "--kind",
        "production_p95_over",
        "--threshold",
        "450",
        "--endpoint",
        "chat-eu",
        "--min-n",
        "50",
    )
    assert out.returncode == 0, out.stderr
    (rule,) = store.load_rules(sqlite_engine)
    assert (rule.kind, rule.threshold, rule.min_n) == (AlertKind.PRODUCTION_P95_OVER, 450.0, 50)
    listed = run_cli(sqlite_store_url, "alerts", "list").stdout
    assert "users p95: production_p95_over > 450 ms (production p95 TTFT) over 15 min" in listed
    as_json = json.loads(run_cli(sqlite_store_url, "alerts", "list", "--json").stdout)
    assert (as_json["kind"], as_json["what"], as_json["unit"]) == ("production_p95_over", "production p95 TTFT", "ms")
    helped = run_cli(sqlite_store_url, "alerts", "add", "--help").stdout
    assert "production_p95_over: production p95 TTFT (ms)" in " ".join(helped.split())
