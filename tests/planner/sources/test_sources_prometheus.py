"""Production TTFT per hour from a real Prometheus scraping the built-in simulator's vLLM-named metrics, against the
simulator's own request log: within the histogram's bucket resolution."""

from __future__ import annotations

import bisect
import math
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import httpx
import pytest
import sqlalchemy as sa

from planner.percentiles import nearest_rank
from planner.simulator import SimulatorConfig, running_simulator
from planner.simulator.app import build_app
from planner.simulator.vllm_metrics import VLLM_TTFT_BUCKETS_S
from planner.sources.prometheus import HOUR_MS, PrometheusError, ttft_by_hour
from planner.sources.sync import PROMETHEUS_BACKFILL_HOURS, sync_source
from planner.store.source_hours import load_hours, production_hours
from planner.store.sources import SourceInfo, SourceKind, add_source, get_source
from tests.support.metrics_server import TWO_MODELS, exposition_server
from tests.support.prometheus import running_prometheus
from tests.support.waiting import wait_for

# Each module that starts a real Prometheus runs on one xdist worker: two at once would compete for the same cores.
pytestmark = pytest.mark.xdist_group("prometheus")

N = 120


def _bucket(value_s: float) -> tuple[float, float]:
    """The histogram bucket (lower, upper] holding value_s."""
    i = bisect.bisect_left(VLLM_TTFT_BUCKETS_S, value_s)
    lower = VLLM_TTFT_BUCKETS_S[i - 1] if i else 0.0
    return lower, VLLM_TTFT_BUCKETS_S[i] if i < len(VLLM_TTFT_BUCKETS_S) else math.inf


@pytest.fixture(scope="module")
def scraped():
    """(Prometheus URL, the simulator's TTFT log) after N requests of varied prompt lengths, once Prometheus has
    scraped them all."""
    # prompts of 50–6,000 words at 20,000 tokens/s: TTFT from ~2 ms to ~300 ms, over several of vLLM's buckets
    app = build_app(SimulatorConfig(prefill_tokens_per_s=20_000, slots=16, max_output_tokens=2, seed=3))
    with running_simulator(app=app) as base:
        target = urlsplit(base).netloc
        with running_prometheus([target]) as prom:
            words = [50 + (i * 997) % 6000 for i in range(N)]

            def ask(n: int) -> int:
                body = {"model": "sim-model", "max_tokens": 2, "messages": [{"role": "user", "content": "w " * n}]}
                return httpx.post(f"{base}/chat/completions", json=body, timeout=60).status_code

            with ThreadPoolExecutor(8) as pool:
                assert set(pool.map(ask, words)) == {200}

            def all_scraped() -> bool:
                r = httpx.get(
                    f"{prom}/api/v1/query", params={"query": "sum(vllm:time_to_first_token_seconds_count)"}
                ).json()
                got = r["data"]["result"]
                return bool(got) and float(got[0]["value"][1]) == N

            wait_for(all_scraped, timeout_s=120, what="Prometheus holding every request")
            yield prom, list(app.state.engine.metrics.ttft_log)


def test_hourly_p95_from_prometheus_is_the_logged_p95_to_the_bucket(scraped):
    prom, log = scraped
    first, last = min(at for _, _, at in log), max(at for _, _, at in log)
    hours = ttft_by_hour(prom, first - 1, last, model="sim-model")
    with_requests = [h for h in hours if h.requests > 0]
    assert with_requests
    for h in with_requests:
        in_hour = sorted(t for _, t, at in log if h.hour_start_ms <= at < h.hour_start_ms + HOUR_MS)
        assert h.requests == len(in_hour)
        for p, got_ms in ((0.5, h.p50_ms), (0.95, h.p95_ms)):
            truth_s = nearest_rank(in_hour, p)
            lower, upper = _bucket(truth_s)
            assert got_ms is not None and lower * 1000 <= got_ms <= upper * 1000, (p, truth_s, got_ms)
    assert sum(h.requests for h in with_requests) == N


def test_a_missing_metric_a_wrong_label_and_no_server_are_clear_errors(scraped):
    prom, log = scraped
    now = max(at for _, _, at in log)
    with pytest.raises(PrometheusError, match=r"no series named sglang:time_to_first_token_seconds_count"):
        ttft_by_hour(prom, now - HOUR_MS, now, profile="sglang")
    with pytest.raises(PrometheusError, match=r"model_name='gpt-4o'; it has sim-model"):
        ttft_by_hour(prom, now - HOUR_MS, now, model="gpt-4o")
    with pytest.raises(PrometheusError, match="cannot be reached"):
        ttft_by_hour("http://127.0.0.1:9", now - HOUR_MS, now, deadline_s=2)


def test_the_command_prints_the_hours_the_library_reads(scraped):
    import json

    from click.testing import CliRunner

    from planner.cli import cli

    prom, log = scraped
    got = CliRunner().invoke(cli, ["sources", "prometheus", prom, "--model", "sim-model", "--hours", "2", "--json"])
    assert got.exit_code == 0, got.output
    hours = [h for h in map(json.loads, got.stdout.splitlines()) if h["requests"]]  # JSON Lines: one hour a line
    assert sum(h["requests"] for h in hours) == N and all(h["p95_ms"] for h in hours)
    text = CliRunner().invoke(cli, ["sources", "prometheus", prom, "--profile", "sglang"])
    assert text.exit_code == 1 and "no series named sglang:" in text.output


def test_the_queue_p95_from_prometheus_is_the_logged_one_to_the_bucket():
    """Sixteen requests at once on two slots: the queue the worksheet's first segment is made of."""
    from planner.simulator.vllm_metrics import VLLM_QUEUE_BUCKETS_S

    app = build_app(SimulatorConfig(prefill_tokens_per_s=2_000, slots=2, max_output_tokens=1, speedup=4, seed=5))
    with running_simulator(app=app) as base, running_prometheus([urlsplit(base).netloc]) as prom:

        def ask(i: int) -> httpx.Response:  # distinct prompts: no prefix-cache hit shortens a prefill
            body = {"model": "sim-model", "max_tokens": 1, "messages": [{"role": "user", "content": f"w{i} " * 600}]}
            return httpx.post(f"{base}/chat/completions", json=body, timeout=60)

        with ThreadPoolExecutor(16) as pool:
            codes = list(pool.map(ask, range(16)))
        assert {r.status_code for r in codes} == {200}

        def scraped() -> bool:
            q = "sum(vllm:request_queue_time_seconds_count)"
            got = httpx.get(f"{prom}/api/v1/query", params={"query": q}).json()["data"]["result"]
            return bool(got) and float(got[0]["value"][1]) == 16

        wait_for(scraped, timeout_s=120, what="Prometheus holding every queue wait")
        waits = sorted(q for _, q in app.state.engine.metrics.queue_log)
        at = max(at for _, _, at in app.state.engine.metrics.ttft_log)
        hours = [h for h in ttft_by_hour(prom, at - HOUR_MS, at) if h.requests]
    truth = nearest_rank(waits, 0.95)
    i = bisect.bisect_left(VLLM_QUEUE_BUCKETS_S, truth)
    lower, upper = (VLLM_QUEUE_BUCKETS_S[i - 1] if i else 0.0), VLLM_QUEUE_BUCKETS_S[i]
    assert truth > 0.3  # a real queue: 16 requests of ~0.3 simulated s each on 2 slots
    assert len(hours) == 1 or sum(h.requests for h in hours) == 16
    got = max(h.queue_p95_ms for h in hours if h.queue_p95_ms is not None)
    assert lower * 1000 <= got <= upper * 1000, (truth, got)


def test_a_url_that_is_not_http_is_refused_before_any_request():
    for url in ("prometheus:9090", "file:///etc/passwd", "http://a b"):
        with pytest.raises(PrometheusError, match="the Prometheus URL"):
            ttft_by_hour(url, 0, HOUR_MS)


def test_the_worksheet_takes_the_largest_queue_p95_of_an_hour_with_enough_requests_for_a_p95():
    from planner.sources.prometheus import MIN_REQUESTS_FOR_P95, HourTtft, busiest_hour, queue_hour_for_worksheet

    assert MIN_REQUESTS_FOR_P95 == 20
    few = HourTtft(0, 19, 100.0, 900.0, 1.0, queue_p95_ms=5_000.0)  # the largest queue, but a p95 of 19 is a max
    a = HourTtft(HOUR_MS, 20, 100.0, 300.0, 1.0, queue_p95_ms=800.0)
    b = HourTtft(2 * HOUR_MS, 400, 100.0, 300.0, 1.0, queue_p95_ms=600.0)
    assert queue_hour_for_worksheet([few, a, b]) == a and queue_hour_for_worksheet([few]) is None
    assert busiest_hour([few, a, b]) == b and busiest_hour([HourTtft(0, 0, None, None, None)]) is None


# --- a stored Prometheus source: synced by the command and the worker, read back per hour ---------------------------


def _stored(engine, prom: str, name: str = "engines", model: str | None = "sim-model") -> SourceInfo:
    add_source(engine, name, SourceKind.PROMETHEUS, "", url=prom, profile="vllm", model_filter=model)
    return get_source(engine, name)


def test_a_stored_source_keeps_the_hours_the_library_reads_and_a_second_sync_replaces_them(scraped, sqlite_engine):
    prom, log = scraped
    src = _stored(sqlite_engine, prom)
    now = max(at for _, _, at in log) + 1
    rep = sync_source(sqlite_engine, src, now_ms=now)
    want = ttft_by_hour(prom, now - PROMETHEUS_BACKFILL_HOURS * HOUR_MS, now, model="sim-model")
    assert rep.read == len(want) >= PROMETHEUS_BACKFILL_HOURS and rep.new == sum(1 for h in want if h.requests)
    assert load_hours(sqlite_engine, src.id) == want
    busy = [h for h in want if h.requests]
    assert production_hours(sqlite_engine, src.id) == busy
    assert sum(h.requests for h in production_hours(sqlite_engine, src.id)) == N
    src = get_source(sqlite_engine, "engines")
    assert src.n_requests == N and src.last_error is None and src.watermark_ms == want[-1].hour_start_ms

    # the next sync reads from the newest hour stored (it may still have been filling): nothing twice
    again = sync_source(sqlite_engine, src, now_ms=now)
    assert again.read == 1
    assert load_hours(sqlite_engine, src.id) == want and get_source(sqlite_engine, "engines").n_requests == N


def test_an_unreachable_server_is_recorded_on_the_source_and_nothing_stored_is_lost(scraped, sqlite_engine):
    prom, log = scraped
    now = max(at for _, _, at in log) + 1
    src = _stored(sqlite_engine, prom)
    sync_source(sqlite_engine, src, now_ms=now)
    kept = load_hours(sqlite_engine, src.id)
    with sqlite_engine.begin() as conn:  # the server moves away
        conn.execute(sa.text("UPDATE source SET url = 'http://127.0.0.1:9' WHERE id = :i"), {"i": src.id})
    with pytest.raises(PrometheusError, match="cannot be reached"):
        sync_source(sqlite_engine, get_source(sqlite_engine, "engines"), now_ms=now)
    assert "cannot be reached" in (get_source(sqlite_engine, "engines").last_error or "")
    assert load_hours(sqlite_engine, src.id) == kept


def test_the_worker_syncs_a_prometheus_source_on_its_period(scraped, sqlite_engine):
    from tests.support.fake_clock import FakeClock
    from tests.support.worker_driver import drive, until

    prom, _ = scraped
    src = _stored(sqlite_engine, prom)

    async def body(worker):
        await until(lambda: worker.source_syncs.passes >= 1, "a first pass over the sources")
        return production_hours(sqlite_engine, src.id)

    got = drive(sqlite_engine, body, clock=FakeClock(), source_sync_s=300.0)
    assert sum(h.requests for h in got) == N and all(h.p95_ms for h in got)


def test_the_commands_add_test_sync_and_show_a_prometheus_source_and_refuse_a_password(scraped, sqlite_store_url):
    import json

    from click.testing import CliRunner

    from planner.cli import cli

    prom, _ = scraped
    run = lambda *args: CliRunner().invoke(cli, ["sources", *args, "--database-url", sqlite_store_url])  # noqa: E731
    host = prom.split("://", 1)[1]
    refused = run("add", "p", "--prometheus-url", f"http://reader:pa55w0rd@{host}")
    assert refused.exit_code == 2 and "pa55w0rd" not in refused.output and "credentials" in refused.output
    added = run("add", "prom", "--prometheus-url", prom, "--model", "sim-model")
    assert added.exit_code == 0 and "added source prom (prometheus" in added.output, added.output
    tested = run("test", "prom")
    assert tested.exit_code == 0 and "vllm:time_to_first_token_seconds for sim-model" in tested.output
    synced = run("sync", "prom", "--json")
    assert synced.exit_code == 0, synced.output
    assert sum(h["requests"] for h in json.loads(synced.stdout)["hours"]) == N
    shown = run("hours", "prom", "--json")
    assert [json.loads(line) for line in shown.stdout.splitlines()] == json.loads(synced.stdout)["hours"]
    assert "prom  prometheus  " + prom in run("list").output
    # another name for the TTFT histogram: read instead of the profile's (SGLang's has no series here)
    named = ["--profile", "sglang", "--metric", "vllm:time_to_first_token_seconds", "--model", "sim-model"]
    assert run("add", "custom", "--prometheus-url", prom, *named).exit_code == 0
    assert "vllm:time_to_first_token_seconds for sim-model" in run("test", "custom").output
    custom = run("sync", "custom", "--json")
    hours = lambda out: json.loads(out)["hours"]  # noqa: E731
    ttft = lambda out: [(h["hour_start_ms"], h["requests"], h["p50_ms"], h["p95_ms"]) for h in hours(out)]  # noqa: E731
    assert custom.exit_code == 0 and ttft(custom.stdout) == ttft(synced.stdout)  # the TTFT figures; no queue ones
    wrong = run("add", "other", "--prometheus-url", prom, "--model", "gpt-4o")
    assert wrong.exit_code == 0
    said = run("test", "other")
    assert said.exit_code == 1 and "model_name='gpt-4o'; it has sim-model" in said.output


# --- TGI: no first-token histogram; its queue time (the queueing segment) and its count ----------------------------

TGI_EXPOSITION = """# TYPE tgi_request_queue_duration histogram
tgi_request_queue_duration_bucket{le="0.01"} 2
tgi_request_queue_duration_bucket{le="0.05"} 7
tgi_request_queue_duration_bucket{le="0.1"} 15
tgi_request_queue_duration_bucket{le="0.5"} 23
tgi_request_queue_duration_bucket{le="1"} 25
tgi_request_queue_duration_bucket{le="+Inf"} 25
tgi_request_queue_duration_sum 6.2
tgi_request_queue_duration_count 25
# TYPE tgi_queue_size gauge
tgi_queue_size 3
"""


@pytest.fixture(scope="module")
def tgi_scraped():
    """Prometheus scraping a server that answers TGI's metric names (a fixed exposition of 25 queued requests)."""
    with exposition_server(TGI_EXPOSITION) as target, running_prometheus([target]) as prom:
        yield prom


def test_tgi_hours_carry_its_queue_p95_and_requests_and_no_ttft(tgi_scraped):
    import time

    now = int(time.time() * 1000)
    hours = [h for h in ttft_by_hour(tgi_scraped, now - HOUR_MS, now, profile="tgi") if h.requests]
    assert len(hours) == 1
    [h] = hours
    # 0.95 × 25 = 23.75th request: in the (0.5 s, 1 s] bucket (23 → 25), linearly 0.5 + 0.5 × 0.75 / 2 = 0.6875 s
    assert (h.requests, h.p50_ms, h.p95_ms, h.waiting_mean) == (25.0, None, None, 3.0)
    assert h.queue_p95_ms == pytest.approx(687.5)
    with pytest.raises(PrometheusError, match="has no model label"):
        ttft_by_hour(tgi_scraped, now - HOUR_MS, now, profile="tgi", model="m")
    from planner.sources.prometheus import found_words, models

    assert found_words("tgi", models(tgi_scraped, profile="tgi")) == (
        "tgi_request_queue_duration (one server: no model label)"
    )


# --- two models on one server: each hour's mean waiting is the model's own gauge, not every model's ------------------


def test_mean_waiting_is_the_chosen_models_own_gauge_read_and_stored(sqlite_engine):
    """m1 waits 2, m2 waits 10: m1's hour says 2.0 (not 6.0, the mean over both), read and synced alike."""
    import time

    with exposition_server(TWO_MODELS) as target, running_prometheus([target]) as prom:
        now = int(time.time() * 1000)
        hours = [h for h in ttft_by_hour(prom, now - HOUR_MS, now, model="m1") if h.requests]
        src = _stored(sqlite_engine, prom, model="m1")
        sync_source(sqlite_engine, src, now_ms=now)
    assert [(h.requests, h.waiting_mean) for h in hours] == [(30.0, 2.0)]
    assert [(h.requests, h.waiting_mean) for h in production_hours(sqlite_engine, src.id)] == [(30.0, 2.0)]
