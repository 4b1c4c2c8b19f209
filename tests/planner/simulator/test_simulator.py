"""The simulated endpoint: its timing model in virtual time, and what only real HTTP shows.

The model (FIFO slots, cold start and scale-down, prefix cache, prefill and decode rates, pings, speedup) is
checked in virtual time (planner.simulator.virtual): the probe engine reads the simulator in-process on a clock
that moves only by the model's own waits, so every figure is exact whatever else the machine is doing. Real HTTP
checks the protocols' frames, headers, error statuses with Retry-After and TCP_NODELAY, asserting nothing about
time. The same figures over real HTTP, with a loaded machine's noise on them, are bench/bench_simulator.py's.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import statistics
from pathlib import Path

import httpx
import pytest

from planner.probes.fit import fit_prefill
from planner.probes.ttft import ProbeTarget, TtftSample, probe_once
from planner.simulator import OFFICE_LOAD_CURVE, SimulatorConfig, parse_load_curve, running_simulator
from planner.simulator.timing import SimEngine
from planner.simulator.virtual import VirtualSimulator, run_virtual, virtual_clock_ns, virtual_simulator


def probe(url: str, **kw) -> TtftSample:
    """One probe over real HTTP."""
    kw.setdefault("prompt_tokens", 64)
    kw.setdefault("max_tokens", 4)
    attempts = kw.pop("max_attempts", 1)
    return asyncio.run(probe_once(ProbeTarget(base_url=url, model="sim-model", **kw), max_attempts=attempts))


async def vprobe(sim: VirtualSimulator, **kw) -> TtftSample:
    """One probe of a simulator in virtual time (its timings are the model's, exactly)."""
    kw.setdefault("prompt_tokens", 64)
    kw.setdefault("max_tokens", 4)
    attempts = kw.pop("max_attempts", 1)
    target = ProbeTarget(base_url=sim.url, model="sim-model", **kw)
    return await probe_once(target, client=sim.client, max_attempts=attempts, clock_ns=virtual_clock_ns)


def now_s() -> float:
    """The virtual clock (s since the scenario began)."""
    return asyncio.get_running_loop().time()


async def advance(seconds: float) -> None:
    """Let `seconds` of virtual time pass: at once in real time, the loop's clock jumps past the model's timers."""
    await asyncio.sleep(seconds)  # virtual time: no real wait


def assert_idle(sim: VirtualSimulator) -> None:
    """Every request gave its slot back and nobody waits (the books balance after the probes closed their streams)."""
    stats = sim.engine.stats()
    assert (stats["busy_slots"], stats["queued"], stats["load_waiters"]) == (0, 0, 0), stats


# --- real HTTP: protocols, headers, statuses ---------------------------------------------------------------------


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


def test_cold_503_answers_retry_after():
    with running_simulator(SimulatorConfig(start_cold=True, cold_503=True, cold_start_s=1.0)) as url:
        r = httpx.post(url + "/chat/completions", json={"model": "m", "messages": [], "stream": True})
    assert r.status_code == 503 and r.headers["retry-after"] == "1"  # the whole 1 s load is left: it just started
    assert "loading" in r.json()["error"]["message"]


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


def _server_side_nodelay(client_addr: tuple[str, int]) -> int | None:
    """TCP_NODELAY of this process's socket whose peer is `client_addr` (the simulator's accepted connection)."""
    for name in os.listdir("/proc/self/fd"):
        try:
            dup = os.dup(int(name))
        except OSError:
            continue
        try:
            sock = socket.socket(fileno=dup)
        except OSError:  # not a socket
            os.close(dup)
            continue
        with sock:
            try:
                if sock.getpeername()[:2] == client_addr[:2]:
                    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
            except OSError:  # not connected (a listener) or not TCP
                continue
    return None


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="finds the server's socket through /proc/self/fd")
def test_the_servers_connections_send_each_write_at_once():
    """Each token is its own ASGI message (test below); it is its own TCP write only with Nagle off on the
    server's side of the connection, which running_simulator sets (the real gaps: bench/bench_simulator.py)."""
    body = {"model": "m", "max_tokens": 50, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with (
        running_simulator() as url,
        httpx.Client(trust_env=False) as c,
        c.stream("POST", url + "/chat/completions", json=body) as r,
    ):
        chunks = r.iter_raw()  # held: a dropped generator would close the response
        next(chunks)  # the connection is accepted and streaming
        client_addr = r.extensions["network_stream"].get_extra_info("client_addr")
        assert _server_side_nodelay(client_addr) == 1


# --- the timing model, in virtual time ---------------------------------------------------------------------------


def test_prefill_time_grows_with_uncached_prompt_tokens():
    async def scenario():
        async with virtual_simulator(SimulatorConfig(prefill_tokens_per_s=20_000, base_overhead_ms=5)) as sim:
            return [(n, (await vprobe(sim, prompt_tokens=n)).ttft_ms) for _ in range(2) for n in (256, 6000)]

    fit = fit_prefill(run_virtual(scenario()))
    assert fit.slope_ms_per_token == pytest.approx(0.05), fit.describe()  # 20,000 tokens/s
    assert fit.intercept_ms == pytest.approx(5.0), fit.describe()  # the admission overhead


def test_cached_series_hits_the_prefix_cache_and_nonces_miss_it():
    async def scenario():
        async with virtual_simulator(SimulatorConfig(prefill_tokens_per_s=10_000, base_overhead_ms=15)) as sim:
            fresh = [await vprobe(sim, prompt_tokens=4000) for _ in range(2)]
            first_cached = await vprobe(sim, prompt_tokens=4000, cached=True)
            cached = await vprobe(sim, prompt_tokens=4000, cached=True)
            assert_idle(sim)
        return fresh, first_cached, cached

    fresh, first_cached, cached = run_virtual(scenario())
    assert [s.cached_tokens for s in (*fresh, first_cached)] == [0, 0, 0]  # nonces miss; the series' first fills it
    assert [s.ttft_ms for s in fresh] == pytest.approx([415.0, 415.0])  # 15 ms + 4,000 tokens at 10,000/s
    assert cached.cached_tokens >= 3900 and cached.cached_series
    # the cached tokens are not prefilled again: 0.1 ms each saved
    assert cached.ttft_ms == pytest.approx(415.0 - cached.cached_tokens * 0.1)


def test_requests_beyond_the_slots_queue_first_in_first_out():
    cfg = SimulatorConfig(slots=1, prefill_tokens_per_s=2_000, decode_tokens_per_s=1000, base_overhead_ms=0)

    async def scenario():
        async with virtual_simulator(cfg) as sim:
            tasks = []
            for _ in range(3):  # sent 1 ms apart: a known arrival order
                tasks.append(asyncio.create_task(vprobe(sim, prompt_tokens=400, max_tokens=2)))
                await advance(0.001)
            await advance(0.1 - now_s())
            queue_at_100ms = sim.engine.stats()
            samples = await asyncio.gather(*tasks)
            assert_idle(sim)
        return queue_at_100ms, samples

    queue_at_100ms, samples = run_virtual(scenario())
    assert (queue_at_100ms["busy_slots"], queue_at_100ms["queued"]) == (1, 2)  # one served, two waiting
    assert all(s.ok for s in samples)
    # Each prefills for 200 ms and holds the slot 1 ms more for its second token; the 2nd, sent at 1 ms, gets the
    # slot at 201 ms (first token at 401, TTFT 400); the 3rd, sent at 2 ms, at 402 (first token at 602, TTFT 600).
    assert [s.ttft_ms for s in samples] == pytest.approx([200.0, 400.0, 600.0])


def test_scale_to_zero_then_cold_start_then_warm_again():
    cfg = SimulatorConfig(scale_down_window_s=0.3, cold_start_s=0.6, prefill_tokens_per_s=50_000)

    async def scenario():
        async with virtual_simulator(cfg) as sim:
            warm = await vprobe(sim)
            await advance(0.2)  # idle, but within the scale-down window
            still_warm = await vprobe(sim)
            await advance(0.5)  # past the window: the model is unloaded
            cold = await vprobe(sim)
            warm_again = await vprobe(sim)
            return warm, still_warm, cold, warm_again, sim.engine.cold_starts

    warm, still_warm, cold, warm_again, cold_starts = run_virtual(scenario())
    assert warm.ok and still_warm.ok and cold.ok and warm_again.ok
    assert cold_starts == 1
    assert cold.headers_ms == pytest.approx(600.0)  # held before any byte while loading, as a gateway holds it
    assert cold.ttft_ms == pytest.approx(warm.ttft_ms + 600.0)
    assert still_warm.ttft_ms == pytest.approx(warm.ttft_ms) and warm_again.ttft_ms == pytest.approx(warm.ttft_ms)


def test_cold_503_lets_the_probe_retry_into_the_loaded_model():
    async def scenario():
        async with virtual_simulator(SimulatorConfig(start_cold=True, cold_503=True, cold_start_s=1.0)) as sim:
            return await vprobe(sim, max_attempts=4), sim.engine.cold_starts

    s, cold_starts = run_virtual(scenario())
    # the first attempt gets 503 + Retry-After: 1; the probe waits that second, when the load has just finished
    assert s.ok and s.attempts == 2 and s.retry_wait_ms == 1000.0
    assert s.ttft_ms == pytest.approx(1000.0 + 15.0 + 64 / 4000 * 1000)  # + overhead and prefill of 64 tokens
    assert cold_starts == 1


def test_speedup_compresses_simulated_time():
    async def scenario():
        async with virtual_simulator(SimulatorConfig(start_cold=True, cold_start_s=20.0, speedup=100.0)) as sim:
            return await vprobe(sim)

    s = run_virtual(scenario())
    assert s.ok and s.headers_ms == pytest.approx(200.0)  # 20 s simulated = 0.2 s
    assert s.ttft_ms == pytest.approx(200.0 + (15.0 + 64 / 4000 * 1000) / 100)  # the rest compressed too


def test_long_prefill_sends_ping_comments_that_the_probe_ignores():
    cfg = SimulatorConfig(prefill_tokens_per_s=10_000, ping_interval_s=0.05, base_overhead_ms=15)
    body = {"model": "m", "max_tokens": 2, "stream": True, "messages": [{"role": "user", "content": "w " * 3000}]}

    async def scenario():
        async with virtual_simulator(cfg) as sim:
            raw = (await sim.client.post(sim.url + "/chat/completions", json=body)).content
            return raw, await vprobe(sim, prompt_tokens=3000)

    raw, s = run_virtual(scenario())
    assert raw.count(b": ping\n\n") >= 5  # one per 50 ms of the 300 ms prefill
    assert s.ok and s.output_tokens == 4 and s.ttft_ms == pytest.approx(15.0 + 300.0)


def test_tokens_arrive_one_write_each_at_the_decode_rate():
    """Each token is its own write, paced by decode_tokens_per_s (not batched, not bunched in pairs)."""
    body = {"model": "m", "max_tokens": 30, "stream": True, "messages": [{"role": "user", "content": "hi"}]}

    async def scenario():
        async with (
            virtual_simulator(SimulatorConfig(decode_tokens_per_s=50)) as sim,
            sim.client.stream("POST", sim.url + "/chat/completions", json=body) as r,
        ):
            return [(now_s(), chunk) async for chunk in r.aiter_raw()]

    reads = run_virtual(scenario())
    frames = [(t, json.loads(chunk.removeprefix(b"data: "))) for t, chunk in reads if chunk != b"data: [DONE]\n\n"]
    assert all(chunk.count(b"\n\n") == 1 for _, chunk in reads)  # one SSE frame per write
    tokens = [t for t, f in frames if f["choices"][0]["delta"].get("content")]
    assert len(tokens) == 30
    gaps_ms = [(b - a) * 1000 for a, b in zip(tokens, tokens[1:], strict=False)]
    assert gaps_ms == pytest.approx([20.0] * 29)  # 50 tokens/s


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

    async def first_token_at(sim: VirtualSimulator, sent_at: float) -> float:
        s = await vprobe(sim, prompt_tokens=400, max_tokens=1)
        assert s.ok, s.error_detail
        return sent_at + s.ttft_ms / 1000

    async def scenario():
        async with virtual_simulator(cfg) as sim:
            tasks = []
            for _ in range(6):  # sent 1 ms apart while the model loads: a known arrival order
                tasks.append(asyncio.create_task(first_token_at(sim, now_s())))
                await advance(0.001)
            waiting = sim.engine.stats()["load_waiters"]
            done = await asyncio.gather(*tasks)
            assert_idle(sim)
            return waiting, done, sim.engine.cold_starts

    waiting, done, cold_starts = run_virtual(scenario())
    assert waiting == 6 and cold_starts == 1
    # the load ends at 0.4 s (2 s at 5×); then one 400-token prefill (80 ms at 5×) after another, in arrival order
    assert done == pytest.approx([0.4 + 0.08 * (i + 1) for i in range(6)])


# --- pure model pieces -------------------------------------------------------------------------------------------


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
