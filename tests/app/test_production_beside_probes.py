"""Your users' p95 beside a probe's (issue 32): the figure a reader sees on the Probes page and in the Compare page's
per-endpoint table is planner.percentiles.summarize of the stored source requests that map to the endpoint in the page's
range; a source whose API base is another endpoint's shows nothing there (the Probes page says how to add one); the
Alerts page offers a production p95 rule, stores it from its form and shows its series under the vantage
"production"."""

from __future__ import annotations

import time

from planner.alerts.evaluate import evaluate_all
from planner.alerts.rules import AlertKind
from planner.alerts.words import KIND_CHOICES
from planner.endpoints.registry import add_endpoint
from planner.percentiles import summarize
from planner.store import alerts as alert_store
from planner.store import open_store
from planner.store.probes import ProbeSampleRow, insert_samples
from planner.store.sources import SourceKind, add_source, store_batch
from tests.app.conftest import open_page, shown_table
from tests.support.compare_seed import DAY_MS, seed_endpoint

HOUR = 3_600_000


def _requests(
    engine, source_id: int, start_ms: int, ttfts, *, base: str, model: str, tag: str, step_ms: int = 60_000
) -> None:
    rows = [
        {
            "request_id": f"{tag}-{i}",
            "ts_ms": start_ms + i * step_ms,
            "model": model,
            "api_base": base,
            "prompt_tokens": 800,
            "cached_tokens": 0,
            "output_tokens": 30,
            "ttft_ms": float(v),
            "duration_ms": float(v) + 900,
        }
        for i, v in enumerate(ttfts)
    ]
    store_batch(engine, source_id, rows, None)


def _probe_samples(engine, endpoint_id: int, now_ms: int) -> None:
    insert_samples(
        engine,
        [
            ProbeSampleRow(
                endpoint_id=endpoint_id,
                vantage="",
                kind="scheduled",
                scheduled_at_ms=now_ms - 2 * HOUR + k * 120_000,
                started_at_ms=now_ms - 2 * HOUR + k * 120_000,
                ok=True,
                ttft_ms=250.0 + k,
            )
            for k in range(25)
        ],
    )


def _probed_chat_and_a_proxy(engine, now_ms: int) -> int:
    """The endpoint "chat" (http://127.0.0.1:1/v1, model m) with its 25 probe samples, and a LiteLLM source
    "prod-proxy"; returns the source's id."""
    ep = add_endpoint(engine, {"name": "chat", "base_url": "http://127.0.0.1:1/v1", "model": "m"})
    assert ep.id is not None
    _probe_samples(engine, ep.id, now_ms)
    return add_source(engine, "prod-proxy", SourceKind.LITELLM, "PROXY_DSN")


def _users_line(at) -> list[str]:
    return [m.value for m in at.markdown if m.value.startswith("Your users' p95")]


def test_the_probes_page_shows_your_users_p95_of_the_requests_mapped_to_the_endpoint_in_its_range():
    engine = open_store()
    now = int(time.time() * 1000)
    proxy = _probed_chat_and_a_proxy(engine, now)
    inside = [300 + (k * 37) % 400 for k in range(60)]  # the last 6 hours: inside the default range (7 days)
    _requests(engine, proxy, now - 6 * HOUR, inside, base="http://127.0.0.1:1/v1/", model="openai/m", tag="in")
    # 30 days ago, outside the range; and, today, another model at the same base URL: neither counts
    _requests(engine, proxy, now - 30 * DAY_MS, [9_000] * 30, base="http://127.0.0.1:1", model="m", tag="old")
    _requests(engine, proxy, now - 5 * HOUR, [9_000] * 30, base="http://127.0.0.1:1/v1", model="m-large", tag="big")
    engine.dispose()

    at = open_page("probes")
    p95 = summarize(inside)["p95"].value
    assert _users_line(at) == [f"Your users' p95: {p95:,.0f} ms (60 requests via prod-proxy)"]
    probe_p95 = {m.label: m.value for m in at.metric}["p95 TTFT"]  # beside the probe's own p95
    assert probe_p95 == f"{summarize([250.0 + k for k in range(25)])['p95'].value:,.0f} ms"
    assert not any("no live source" in c.value for c in at.caption)


def test_a_source_sending_to_another_base_url_shows_nothing_and_the_page_says_how_to_add_one():
    engine = open_store()
    now = int(time.time() * 1000)
    proxy = _probed_chat_and_a_proxy(engine, now)
    _requests(engine, proxy, now - 3 * HOUR, [400] * 40, base="http://127.0.0.1:2/v1", model="m", tag="x")
    engine.dispose()

    at = open_page("probes")
    assert _users_line(at) == []
    (hint,) = [c.value for c in at.caption if c.value.startswith("Your users' p95")]
    assert "no live source has read a request to this endpoint" in hint and "Sources page" in hint


def test_the_compare_page_shows_the_production_p95_where_a_source_maps_and_a_dash_elsewhere(app):
    engine = open_store()
    seed_endpoint(engine, "fast-a", median_ms=300, n=40, seed=1)
    seed_endpoint(engine, "slow-b", median_ms=600, n=40, seed=2)  # https://slow-b.invalid/v1: no source maps to it
    proxy = add_source(engine, "prod-proxy", SourceKind.LITELLM, "PROXY_DSN")
    now = int(time.time() * 1000)
    inside = [200 + (k * 53) % 500 for k in range(45)]
    _requests(engine, proxy, now - 4 * HOUR, inside, base="https://FAST-A.invalid:443/v1/", model="coder-32b", tag="a")
    _requests(engine, proxy, now - 30 * DAY_MS, [9_000] * 20, base="https://fast-a.invalid", model="coder-32b", tag="o")
    # another port is another server: these are not slow-b's
    _requests(
        engine, proxy, now - 4 * HOUR, [100] * 40, base="https://slow-b.invalid:8443/v1", model="coder-32b", tag="s"
    )
    engine.dispose()

    open_page("compare", app)
    (table,) = [shown_table(app, i) for i, t in enumerate(app.table) if "Production p95" in t.value.columns]
    cells = dict(zip(table["Endpoint"], table["Production p95"], strict=True))
    assert cells == {"fast-a": f"{summarize(inside)['p95'].value:,.0f} ms (n=45)", "slow-b": "—"}
    assert any(c.value.startswith("Production p95: your users' own requests") for c in app.caption)


def test_the_alerts_page_offers_a_production_p95_rule_and_shows_its_series(cache_clock):
    at = open_page("alerts")
    kinds = at.selectbox(key="alert_kind")
    assert KIND_CHOICES[AlertKind.PRODUCTION_P95_OVER] in kinds.options
    assert "production p95 TTFT over a target (ms)" in KIND_CHOICES[AlertKind.PRODUCTION_P95_OVER]
    at.text_input(key="alert_name").set_value("users p95")
    kinds.set_value("production_p95_over")
    at.number_input(key="alert_threshold").set_value(500.0)
    at.number_input(key="alert_for").set_value(0.0)
    next(b for b in at.button if b.label == "Add rule").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert [s.value for s in at.success] == ["Added rule users p95: production p95 TTFT over 500 ms."]
    assert any(
        m.value.startswith("**users p95** — production p95 TTFT over 500 ms on every endpoint") for m in at.markdown
    )

    engine = open_store()
    (rule,) = alert_store.load_rules(engine)
    assert rule.kind is AlertKind.PRODUCTION_P95_OVER
    seed_endpoint(engine, "slow-b", median_ms=900, n=5)
    proxy = add_source(engine, "prod-proxy", SourceKind.LITELLM, "PROXY_DSN")
    now = int(time.time() * 1000)
    slow = [800 + k for k in range(30)]
    _requests(
        engine, proxy, now - 600_000, slow, base="https://slow-b.invalid/v1", model="coder-32b", tag="s", step_ms=10_000
    )
    evaluate_all(engine, now, deliver=False)
    engine.dispose()

    cache_clock.now += 5.1  # past the page's readers' 5 s: it reads what the evaluation stored
    at.run()
    row = shown_table(at).iloc[0]
    assert (row["State"], row["Rule"], row["Endpoint"], row["Vantage"]) == (
        "● firing",
        "users p95",
        "slow-b",
        "production",
    )
    assert row["Value"] == f"{summarize(slow)['p95'].value:,.0f} ms" and row["Samples (n)"] == "30"
