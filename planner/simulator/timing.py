"""The simulated server's timing model: slots with a FIFO queue, prefix cache, cold start, load curve, errors.

A request's first token arrives after the four segments (queueing, cold start, prefill, network), each
produced by a mechanism rather than a fixed sleep: admission (background load
by hour + waiting for a free slot, first come first served), weight loading
(after `scale_down_window_s` of idleness), prefill (uncached prompt tokens ÷
`prefill_tokens_per_s`, with a prefix cache of recent prompts), and the
network delay before headers.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass

from planner.simulator.batching import StepScheduler
from planner.simulator.config import SimulatorConfig
from planner.simulator.vllm_metrics import SimMetrics

__all__ = ["CACHE_BLOCK_TOKENS", "Admission", "SimEngine"]

#: The prefix cache reuses whole blocks of this many tokens (vLLM's default block size), so a
#: prompt that shares only its first word with another gets no cache credit.
CACHE_BLOCK_TOKENS = 16


@dataclass
class Admission:
    """Outcome of admission control: reject with a status (and Retry-After seconds), or go ahead."""

    status: int = 200
    retry_after_s: int | None = None
    message: str = ""


class SimEngine:
    """Shared state of one simulated endpoint (one per app; lives on the server's event loop)."""

    def __init__(
        self,
        config: SimulatorConfig,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self._clock = clock
        self._wall_clock = wall_clock
        self._rng = random.Random(config.seed)
        self._busy = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._cache: OrderedDict[tuple[str, ...], int] = OrderedDict()
        self._cache_tokens = 0
        self._active = 0
        self._last_active = clock()
        self._warm = not config.start_cold
        self._loading_until: float | None = None
        self._load_waiters: deque[asyncio.Future[None]] = deque()
        self.cold_starts = 0
        self.requests = 0
        self.metrics = SimMetrics(running=self._running, waiting=lambda: self.queued)
        self._drift: tuple[int, float] = (-1, 1.0)  # (period index, speed factor) last drawn
        self.steps: StepScheduler | None = None
        if config.batching:
            self.steps = StepScheduler(
                step_ms=config.step_ms,
                prompt_token_ms=1000.0 / config.prefill_tokens_per_s,
                decode_token_ms=1000.0 / config.decode_tokens_per_s - config.step_ms,
                max_batched_tokens=config.max_batched_tokens,
                max_seqs=config.slots,
                sleep=self.sleep,
                factor=self.speed_factor,
            )

    # --- time -------------------------------------------------------------------------------------------------
    def now_s(self) -> float:
        """Simulated seconds on the engine's clock (real seconds × speedup)."""
        return self._clock() * self.config.speedup

    def wall_ms(self) -> int:
        """Wall-clock UTC epoch ms (the engine's wall clock)."""
        return int(self._wall_clock() * 1000)

    def real_s(self, simulated_s: float) -> float:
        """Real seconds to wait for `simulated_s` simulated seconds."""
        return max(0.0, simulated_s) / self.config.speedup

    async def sleep(self, simulated_s: float) -> None:
        if simulated_s > 0:
            await asyncio.sleep(self.real_s(simulated_s))

    def speed_factor(self) -> float:
        """How many times longer compute takes now than configured (1 without drift): exp(speed_drift_sd × z), z a
        standard normal drawn afresh every speed_drift_period_s simulated seconds (the same for a seed)."""
        sd = self.config.speed_drift_sd
        if sd <= 0:
            return 1.0
        k = math.floor(self.now_s() / self.config.speed_drift_period_s)
        if self._drift[0] != k:
            z = random.Random(f"{self.config.seed or 0}:{k}").gauss(0.0, 1.0)
            self._drift = (k, math.exp(sd * z))
        return self._drift[1]

    # --- admission ----------------------------------------------------------------------------------------------
    def inject_error(self) -> Admission | None:
        """A configured 429/500 for this request, or None."""
        r = self._rng.random()
        if r < self.config.rate_429:
            return Admission(429, self.config.retry_after_s, "simulated rate limit")
        if r < self.config.rate_429 + self.config.rate_5xx:
            return Admission(500, None, "simulated server error")
        return None

    def _check_scale_down(self) -> None:
        window = self.config.scale_down_window_s
        if window is None or not self._warm or self._active > 0:
            return
        idle_sim_s = (self._clock() - self._last_active) * self.config.speedup
        if idle_sim_s > window:
            self._warm = False

    @property
    def warm(self) -> bool:
        self._check_scale_down()
        return self._warm

    def cold_state(self) -> tuple[bool, float]:
        """(loading, simulated seconds left) after starting a load if the model is unloaded."""
        self._check_scale_down()
        if self._warm:
            return False, 0.0
        now = self._clock()
        if self._loading_until is None:
            self._loading_until = now + self.real_s(self.config.effective_cold_start_s)
            self.cold_starts += 1
        left_real = self._loading_until - now
        if left_real <= 0:
            # A fresh load counts as activity: without this, a second request still waiting for the
            # load sees the pre-idle timestamp and starts another load.
            self._warm, self._loading_until, self._last_active = True, None, now
            return False, 0.0
        return True, left_real * self.config.speedup

    async def wait_until_loaded(self) -> None:
        """Hold the caller while the weights load (starting a load if unloaded); callers resume in arrival order.

        Each waiter polling the clock on its own would wake in timer order, not arrival order, and
        reach the slot queue shuffled; one queue of futures keeps the FIFO the what-if replay models.
        """
        loading, left_s = self.cold_state()
        if not loading:
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._load_waiters.append(fut)
        if len(self._load_waiters) == 1:
            asyncio.get_running_loop().call_later(self.real_s(left_s), self._wake_loaded)
        await fut

    def _wake_loaded(self) -> None:
        loading, left_s = self.cold_state()
        if loading:  # the timer fired a hair early: check again when the load is really done
            asyncio.get_running_loop().call_later(self.real_s(left_s), self._wake_loaded)
            return
        while self._load_waiters:
            fut = self._load_waiters.popleft()
            if not fut.done():
                fut.set_result(None)

    def admit_cold(self) -> Admission | None:
        """With cold_503: a 503 + Retry-After while the model loads; else None (the caller waits)."""
        loading, left_s = self.cold_state()
        if loading and self.config.cold_503:
            return Admission(503, max(1, math.ceil(left_s)), "simulated cold start: model is loading")
        return None

    def begin(self) -> None:
        """Mark a request active (it keeps the model warm until `end`)."""
        self._active += 1
        self.requests += 1

    def end(self) -> None:
        self._active -= 1
        self._last_active = self._clock()

    def background_wait_s(self) -> float:
        """Simulated seconds of queueing behind background traffic at this UTC hour (0 without a load curve)."""
        curve = self.config.load_curve
        if not curve:
            return 0.0
        hour = time.gmtime(self._wall_clock()).tm_hour
        rho = curve[hour]
        if rho <= 0 or self._rng.random() >= rho:
            return 0.0
        mean_ms = self.config.load_service_ms * rho / (1.0 - rho)
        return self._rng.expovariate(1.0 / mean_ms) / 1000.0

    # --- slots (FIFO) -------------------------------------------------------------------------------------------
    async def acquire_slot(self) -> None:
        """Wait for a free slot, first come first served."""
        if self._busy < self.config.slots and not self._waiters:
            self._busy += 1
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await fut  # release_slot hands its slot over directly, keeping FIFO order
        except asyncio.CancelledError:
            if fut in self._waiters:
                self._waiters.remove(fut)
            elif fut.done() and not fut.cancelled():
                self.release_slot()  # we were handed a slot but the client went away
            raise

    def release_slot(self) -> None:
        while self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                return
        self._busy -= 1

    @property
    def queued(self) -> int:
        """Requests waiting for a slot (or, batching, to be admitted by the scheduler)."""
        return self.steps.waiting if self.steps is not None else len(self._waiters)

    def _running(self) -> int:
        return self.steps.running if self.steps is not None else self._busy

    # --- prefix cache -------------------------------------------------------------------------------------------
    def cached_prefix_tokens(self, tokens: tuple[str, ...]) -> int:
        """Longest prefix of `tokens` held in the cache, in whole CACHE_BLOCK_TOKENS blocks (tokens)."""
        best, best_entry = 0, None
        for entry in self._cache:
            n = min(len(entry), len(tokens))
            i = 0
            while i < n and entry[i] == tokens[i]:
                i += 1
            if i > best:
                best, best_entry = i, entry
        if best_entry is not None:
            self._cache.move_to_end(best_entry)
        return best // CACHE_BLOCK_TOKENS * CACHE_BLOCK_TOKENS

    def remember(self, tokens: tuple[str, ...]) -> None:
        """Keep `tokens` in the LRU prefix cache (evicting the oldest prompts past prefix_cache_tokens)."""
        cap = self.config.prefix_cache_tokens
        if cap <= 0 or len(tokens) > cap:
            return
        if tokens in self._cache:
            self._cache.move_to_end(tokens)
            return
        self._cache[tokens] = len(tokens)
        self._cache_tokens += len(tokens)
        while self._cache_tokens > cap:
            _, n = self._cache.popitem(last=False)
            self._cache_tokens -= n

    def stats(self) -> dict[str, object]:
        """State for /health (JSON-ready)."""
        return {
            "simulated": True,
            "warm": self.warm,
            "busy_slots": self._busy,
            "queued": self.queued,
            "slots": self.config.slots,
            "requests": self.requests,
            "cold_starts": self.cold_starts,
            "cached_prompts": len(self._cache),
            "load_waiters": len(self._load_waiters),
        }
