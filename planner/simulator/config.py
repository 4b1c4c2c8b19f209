"""Configuration of the simulated endpoint: every behaviour is one field with a unit.

All durations are *simulated* time; with `speedup` s > 1 each real wait is the
simulated duration divided by s (a 10 s cold start at speedup 100 takes 0.1 s),
and the idle time that decides scale-down is real idle time multiplied by s.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.inputs.validate import FRACTION, SEED, Rule

__all__ = ["FIELD_RULES", "OFFICE_LOAD_CURVE", "SimulatorConfig", "parse_load_curve"]

#: The range of every numeric setting (planner.inputs.validate), checked by SimulatorConfig and by `simulate`'s options.
FIELD_RULES: dict[str, Rule] = {
    "prefill_tokens_per_s": Rule(0.01, 1e9, "tokens/s"),
    "decode_tokens_per_s": Rule(0.01, 1e9, "tokens/s"),
    "slots": Rule(1, 4096, integer=True),
    "base_overhead_ms": Rule(0, 600_000, "ms"),
    "network_delay_ms": Rule(0, 600_000, "ms"),
    "prefix_cache_tokens": Rule(0, 100_000_000, integer=True, unit="tokens"),
    "scale_down_window_s": Rule(0, 30 * 86_400, "s"),
    "cold_start_s": Rule(0, 86_400, "s"),
    "checkpoint_gb": Rule(0, 100_000, "GB"),
    "load_gb_per_s": Rule(0, 10_000, "GB/s", lo_open=True),
    "rate_429": FRACTION,
    "rate_5xx": FRACTION,
    "retry_after_s": Rule(0, 3600, integer=True, unit="s"),
    "load_service_ms": Rule(0, 3_600_000, "ms", lo_open=True),
    "max_output_tokens": Rule(1, 1_000_000, integer=True, unit="tokens"),
    "ping_interval_s": Rule(0, 3600, "s"),
    "speedup": Rule(0.001, 1_000_000),
    "seed": SEED,
    "step_ms": Rule(0, 600_000, "ms"),
    "max_batched_tokens": Rule(1, 1_048_576, integer=True, unit="tokens"),
    "speed_drift_sd": Rule(0, 2, "fraction"),
    "speed_drift_period_s": Rule(0.001, 1e7, "s"),
}

#: Background load (slot utilisation 0..1) per UTC hour: quiet nights, a working-day hump.
OFFICE_LOAD_CURVE: tuple[float, ...] = (
    0.05,
    0.05,
    0.05,
    0.05,
    0.05,
    0.08,
    0.15,
    0.3,
    0.5,
    0.7,
    0.8,
    0.85,
    0.8,
    0.8,
    0.85,
    0.8,
    0.7,
    0.5,
    0.35,
    0.25,
    0.15,
    0.1,
    0.08,
    0.05,
)


_OPTIONAL = {"scale_down_window_s", "checkpoint_gb", "load_gb_per_s", "seed"}  # None: not set


@dataclass(frozen=True)
class SimulatorConfig:
    """How the simulated endpoint behaves (see `ttft-planner simulate --help`).

    prefill_tokens_per_s: uncached prompt tokens processed per second (prefill time = uncached/rate).
    decode_tokens_per_s: output tokens per second after the first.
    slots: requests served at once; the rest wait in a FIFO queue.
    base_overhead_ms: fixed admission/scheduling time before prefill.
    network_delay_ms: extra delay before the response headers (stands in for distance).
    prefix_cache_tokens: tokens of recent prompts kept for prefix reuse (0 = no cache).
    scale_down_window_s: idle seconds after which the model is unloaded (None = never).
    cold_start_s: load time after a scale-down; 0 with checkpoint_gb and load_gb_per_s given = their ratio.
    cold_503: while loading, answer 503 with Retry-After instead of holding the request.
    start_cold: begin unloaded (the first request pays the cold start).
    rate_429 / rate_5xx: fraction of requests answered 429 (with Retry-After: retry_after_s) / 500.
    load_curve: 24 background utilisations (0..0.95) by UTC hour, or None; a request waits, with
      probability ρ, an exponential time of mean load_service_ms·ρ/(1−ρ) (an M/M/1-like queue).
    max_output_tokens: cap on generated tokens (the request's max_tokens applies below it).
    role_chunk_early: OpenAI chat sends its role-only chunk as soon as the request is admitted
      (before prefill, as some servers do), so first event ≠ first token.
    ping_interval_s: during a long prefill, send an SSE comment ": ping" this often (0 = never).
    speedup: divide every simulated duration by this (time-compressed replays).
    models: accepted model names (None = any; an unknown one gets 404).
    api_key: when set, requests must carry it (Bearer or x-api-key) or get 401.
    seed: seed of the random source (errors, background load, speed drift); None = random.
    batching: serve as a continuous-batching engine (planner.simulator.batching: scheduler steps of decode tokens and
      prompt chunks up to max_batched_tokens, `slots` = most running sequences) instead of independent slots.
    step_ms: with batching, the fixed cost of a step (ms); a decode token then costs 1000 / decode_tokens_per_s −
      step_ms, a prompt token 1000 / prefill_tokens_per_s.
    max_batched_tokens: with batching, the tokens one step may carry.
    speed_drift_sd: the engine's speed level drifts: every speed_drift_period_s simulated seconds prefill and decode
      (and every step) take exp(speed_drift_sd × a standard normal draw) times as long (seeded; 0 = no drift).
    """

    prefill_tokens_per_s: float = 4000.0
    decode_tokens_per_s: float = 60.0
    slots: int = 4
    base_overhead_ms: float = 15.0
    network_delay_ms: float = 0.0
    prefix_cache_tokens: int = 65536
    scale_down_window_s: float | None = None
    cold_start_s: float = 0.0
    checkpoint_gb: float | None = None
    load_gb_per_s: float | None = None
    cold_503: bool = False
    start_cold: bool = False
    rate_429: float = 0.0
    rate_5xx: float = 0.0
    retry_after_s: int = 1
    load_curve: tuple[float, ...] | None = None
    load_service_ms: float = 400.0
    max_output_tokens: int = 512
    role_chunk_early: bool = True
    ping_interval_s: float = 15.0
    speedup: float = 1.0
    models: tuple[str, ...] | None = None
    api_key: str | None = None
    seed: int | None = None
    batching: bool = False
    step_ms: float = 0.0
    max_batched_tokens: int = 8192
    speed_drift_sd: float = 0.0
    speed_drift_period_s: float = 60.0

    def __post_init__(self) -> None:
        for name, rule in FIELD_RULES.items():
            v = getattr(self, name)
            why = None if v is None and name in _OPTIONAL else rule.problem(v)
            if why is not None:
                raise ValueError(f"simulator {name} {why}")
        if self.batching and self.step_ms > 1000.0 / self.decode_tokens_per_s:
            raise ValueError(
                f"simulator step_ms {self.step_ms:g} is longer than a lone decode step "
                f"({1000.0 / self.decode_tokens_per_s:.3g} ms at {self.decode_tokens_per_s:g} tokens/s)"
            )
        if self.rate_429 + self.rate_5xx > 1.0:
            raise ValueError("simulator rate_429 + rate_5xx must not exceed 1")
        if self.load_curve is not None:
            if len(self.load_curve) != 24 or not all(0.0 <= v <= 0.95 for v in self.load_curve):
                raise ValueError("simulator load_curve needs 24 values (one per UTC hour), each between 0 and 0.95")

    @property
    def effective_cold_start_s(self) -> float:
        """Simulated seconds a cold start takes: cold_start_s if > 0, else checkpoint_gb / load_gb_per_s, else 0."""
        if self.cold_start_s > 0:
            return self.cold_start_s
        if self.checkpoint_gb is not None and self.load_gb_per_s:
            return self.checkpoint_gb / self.load_gb_per_s
        return 0.0


def parse_load_curve(text: str) -> tuple[float, ...] | None:
    """'office', 'none'/'' or 24 comma-separated utilisations; raises ValueError naming the problem."""
    t = text.strip().lower()
    if t in ("", "none", "off"):
        return None
    if t == "office":
        return OFFICE_LOAD_CURVE
    try:
        values = tuple(float(v) for v in t.split(","))
    except ValueError:
        raise ValueError(f"load curve must be 'office', 'none' or 24 comma-separated numbers, got {text!r}") from None
    if len(values) != 24:
        raise ValueError(f"load curve needs 24 values (one per UTC hour), got {len(values)}")
    if not all(0.0 <= v <= 0.95 for v in values):
        raise ValueError("load curve values are utilisations between 0 and 0.95")
    return values
