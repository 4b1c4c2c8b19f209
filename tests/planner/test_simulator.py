"""The simulated endpoint: real HTTP, and timing that follows queueing, cold start, prefill and decode."""

from __future__ import annotations

import asyncio
import statistics
import time

import httpx
import pytest

from planner.probes.fit import fit_prefill
from planner.probes.ttft import ProbeTarget, probe_once
from planner.simulator import OFFICE_LOAD_CURVE, SimulatorConfig, parse_load_curve, running_simulator
from planner.simulator.engine import SimEngine


async def until_health(client, url: str, key: str, value: int, timeout_s: float = 20.0) -> None:
    """Poll the simulator's /health until `key` reaches `value` (orders arrivals by observation, not by sleeps)."""
    health = url.removesuffix("/v1") + "/health"
    deadline = time.monotonic() + timeout_s
    while (await client.get(health)).json()[key] < value:
        if time.monotonic() > deadline:
            raise AssertionError(f"/health {key} never reached {value}")
        await asyncio.sleep(0.002)


def probe(url: str, **kw):
    kw.setdefault("prompt_tokens", 64)
    kw.setdefault("max_tokens", 4)
    attempts = kw.pop("max_attempts", 1)
    return asyncio.run(probe_once(ProbeTarget(base_url=url, model="sim-model", **kw), max_attempts=attempts))


@pytest.mark.parametrize("protocol", ["openai-chat", "openai-completions", "anthropic"])
def test_each_protocol_streams_tokens_with_usage(protocol):
    with running_simulator(SimulatorConfig(decode_tokens_per_s=500)) as url:
        s = probe(url, protocol=protocol, prompt_tokens=200, max_tokens=8)
    assert s.ok, s.error_detail
    assert s.output_tokens == 8 and s.prompt_tokens == 200
    assert s.headers_ms <= s.first_event_ms <= s.ttft_ms <= s.total_ms


def test_responses_are_labelled_simulated():
    with running_simulator() as url:
        r = httpx.post(
            url + "/chat/completions",
            json={"model": "gpt-x", "max_tokens": 2, "messages": [{"role": "user", "content": "hi"}]},
        )
        health = httpx.get(url.removesuffix("/v1") + "/health").json()
    assert r.headers["x-simulated"] == "1"
    assert r.json()["model"] == "simulated/gpt-x"
    assert r.json()["usage"]["completion_tokens"] == 2
    assert health["simulated"] is True and health["warm"] is True


def test_prefill_time_grows_with_uncached_prompt_tokens():
    cfg = SimulatorConfig(prefill_tokens_per_s=20_000, base_overhead_ms=5)
    with running_simulator(cfg) as url:
        pts = [(L, probe(url, prompt_tokens=L).ttft_ms) for _ in range(3) for L in (256, 6000)]
    fit = fit_prefill(pts)
    # 0.05 ms/token configured; load on a shared machine only adds noise on top.
    assert 0.035 <= fit.slope_ms_per_token <= 0.08, fit.describe()


def test_cached_series_hits_the_prefix_cache_and_nonces_miss_it():
    cfg = SimulatorConfig(prefill_tokens_per_s=10_000)
    with running_simulator(cfg) as url:
        fresh = [probe(url, prompt_tokens=4000) for _ in range(2)]
        probe(url, prompt_tokens=4000, cached=True)
        cached = probe(url, prompt_tokens=4000, cached=True)
    assert all(s.cached_tokens == 0 for s in fresh)
    assert cached.cached_tokens >= 3900 and cached.cached_series
    assert cached.ttft_ms < min(s.ttft_ms for s in fresh) - 200  # 400 ms of prefill saved


def test_requests_beyond_the_slots_queue_first_in_first_out():
    cfg = SimulatorConfig(slots=1, prefill_tokens_per_s=2_000, decode_tokens_per_s=1000, base_overhead_ms=0)

    async def burst(url: str) -> list:
        tasks = []
        async with httpx.AsyncClient(timeout=30) as client:
            for i in range(3):
                tasks.append(
                    asyncio.create_task(
                        probe_once(
                            ProbeTarget(base_url=url, model="m", prompt_tokens=400, max_tokens=2), max_attempts=1
                        )
                    )
                )
                await until_health(client, url, "requests", i + 1)  # a known arrival order: the server has it
        return await asyncio.gather(*tasks)

    with running_simulator(cfg) as url:
        samples = asyncio.run(burst(url))
    assert all(s.ok for s in samples)
    ttft = [s.ttft_ms for s in samples]
    # Each request prefills for 200 ms; the 2nd waits for the 1st, the 3rd for both.
    assert ttft[0] < ttft[1] < ttft[2]
    assert ttft[2] - ttft[0] >= 300


def test_scale_to_zero_then_cold_start_then_warm_again():
    cfg = SimulatorConfig(scale_down_window_s=0.3, cold_start_s=0.6, prefill_tokens_per_s=50_000)
    with running_simulator(cfg) as url:
        warm = probe(url)
        time.sleep(0.5)  # past the scale-down window
        cold = probe(url)
        warm_again = probe(url)
    assert warm.ok and cold.ok and warm_again.ok
    assert cold.ttft_ms >= 600
    assert cold.headers_ms >= 600  # held before any byte while loading, as a gateway holds it
    assert warm_again.ttft_ms < cold.ttft_ms - 400


def test_cold_503_answers_retry_after_and_the_probe_retries_into_the_loaded_model():
    cfg = SimulatorConfig(start_cold=True, cold_503=True, cold_start_s=1.0)
    with running_simulator(cfg) as url:
        r = httpx.post(url + "/chat/completions", json={"model": "m", "messages": [], "stream": True})
        s = probe(url, max_attempts=4)
    assert r.status_code == 503 and r.headers["retry-after"] == "1"
    assert s.ok and s.attempts >= 2 and s.retry_wait_ms >= 500


def test_speedup_compresses_simulated_time():
    cfg = SimulatorConfig(start_cold=True, cold_start_s=20.0, speedup=100.0)
    with running_simulator(cfg) as url:
        s = probe(url)
    assert s.ok and 200 <= s.ttft_ms < 2000  # 20 s simulated = 0.2 s real


def test_injected_429_and_5xx():
    with running_simulator(SimulatorConfig(rate_429=1.0, retry_after_s=0, seed=1)) as url:
        s429 = probe(url, max_attempts=2)
    with running_simulator(SimulatorConfig(rate_5xx=1.0, seed=1)) as url:
        s5xx = probe(url)
    assert s429.error_class == "rate_limited" and s429.attempts == 2 and s429.status_code == 429
    assert s5xx.error_class == "server_error" and s5xx.status_code == 500


def test_unknown_model_and_missing_key():
    with running_simulator(SimulatorConfig(models=("sim-model",), api_key="k")) as url:
        wrong_model = asyncio.run(probe_once(ProbeTarget(base_url=url, model="other", prompt_tokens=8), api_key="k"))
        no_key = probe(url)
        ok = asyncio.run(
            probe_once(ProbeTarget(base_url=url, model="sim-model", prompt_tokens=8, max_tokens=2), api_key="k")
        )
    assert wrong_model.error_class == "not_found"
    assert no_key.error_class == "auth"
    assert ok.ok


def test_tokens_arrive_one_write_each_at_the_decode_rate():
    """Each token is its own write, paced by decode_tokens_per_s (not batched, not bunched in pairs)."""
    with running_simulator(SimulatorConfig(decode_tokens_per_s=50)) as url:
        times: list[float] = []
        with (
            httpx.Client(trust_env=False) as c,
            c.stream(
                "POST",
                url + "/chat/completions",
                json={"model": "m", "max_tokens": 30, "stream": True, "messages": [{"role": "user", "content": "hi"}]},
            ) as r,
        ):
            for _ in r.iter_raw():
                times.append(time.perf_counter())
    gaps_ms = [(b - a) * 1000 for a, b in zip(times[5:], times[6:-3], strict=False)]
    assert statistics.median(gaps_ms) == pytest.approx(20, abs=6)
    assert sum(1 for g in gaps_ms if g < 5) <= len(gaps_ms) // 4


def test_background_load_follows_the_hour_of_day():
    night = 3 * 3600.0  # 03:00 UTC
    noon = 12 * 3600.0
    cfg = SimulatorConfig(load_curve=OFFICE_LOAD_CURVE, seed=7)
    quiet = SimEngine(cfg, wall_clock=lambda: night)
    busy = SimEngine(cfg, wall_clock=lambda: noon)
    q = [quiet.background_wait_s() for _ in range(2000)]
    b = [busy.background_wait_s() for _ in range(2000)]
    assert statistics.mean(b) > 20 * statistics.mean(q)
    assert statistics.mean(b) == pytest.approx(0.8 * 0.4 * 0.8 / 0.2, rel=0.2)  # ρ · service · ρ/(1−ρ)


def test_config_rejects_nonsense_with_the_field_name():
    with pytest.raises(ValueError, match="slots"):
        SimulatorConfig(slots=0)
    with pytest.raises(ValueError, match="rate_429"):
        SimulatorConfig(rate_429=1.5)
    with pytest.raises(ValueError, match="24 values"):
        parse_load_curve("0.1,0.2")
    assert SimulatorConfig(checkpoint_gb=16, load_gb_per_s=2).effective_cold_start_s == 8.0


def test_long_prefill_sends_ping_comments_that_the_probe_ignores():
    cfg = SimulatorConfig(prefill_tokens_per_s=10_000, ping_interval_s=0.05)
    with running_simulator(cfg) as url:
        body = httpx.post(
            url + "/chat/completions",
            json={
                "model": "m",
                "max_tokens": 2,
                "stream": True,
                "messages": [{"role": "user", "content": "w " * 3000}],
            },
        ).content
        s = probe(url, prompt_tokens=3000)
    assert body.count(b": ping\n\n") >= 4
    assert s.ok and s.output_tokens == 4 and s.ttft_ms >= 300


def test_two_requests_waiting_on_one_load_cause_one_cold_start():
    """After a long idle, a load that just finished counts as activity: a second waiter must not start another load."""
    now = [0.0]
    eng = SimEngine(SimulatorConfig(scale_down_window_s=600, cold_start_s=30), clock=lambda: now[0])
    now[0] = 650.0  # idle past the scale-down window
    assert eng.cold_state()[0] is True  # request A starts the load
    now[0] = 659.0
    assert eng.cold_state()[0] is True  # request B waits on the same load
    now[0] = 681.0  # the load has finished; A notices first, B before A has begun
    assert eng.cold_state() == (False, 0.0)
    assert eng.cold_state() == (False, 0.0)
    assert eng.cold_starts == 1


def test_requests_held_by_a_cold_start_are_served_in_arrival_order():
    """After the load, the waiters reach the single slot first come first served (as the what-if replay models)."""
    cfg = SimulatorConfig(
        start_cold=True,
        cold_start_s=2.0,
        speedup=5.0,
        slots=1,
        prefill_tokens_per_s=1000,
        decode_tokens_per_s=1000,
        base_overhead_ms=0,
        prefix_cache_tokens=0,
        ping_interval_s=0,
    )

    async def first_token_at(client, url):
        body = {
            "model": "m",
            "stream": True,
            "max_tokens": 1,
            "messages": [{"role": "user", "content": " ".join(["word"] * 400)}],
        }
        async with client.stream("POST", url + "/chat/completions", json=body) as r:
            async for chunk in r.aiter_text():
                if '"content":" ' in chunk:
                    return time.perf_counter()
        raise AssertionError("no content")

    async def main(url):
        async with httpx.AsyncClient(timeout=30) as client:
            tasks = []
            for i in range(6):  # each one is held by the load before the next is sent: a known arrival order
                tasks.append(asyncio.create_task(first_token_at(client, url)))
                await until_health(client, url, "load_waiters", i + 1)
            return await asyncio.gather(*tasks)

    with running_simulator(cfg) as url:
        done = asyncio.run(main(url))
    assert done == sorted(done)
