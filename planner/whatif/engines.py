"""Serving-engine profiles for the what-if: which scheduler a dedicated replica runs, and its step costs.

`engine=slots` (the default) is the first model: N independent slots, FIFO across the pool, each at the full rate.
`engine=vllm|sglang|llama.cpp` is a continuous-batching engine replayed step by step (planner.whatif.steps): each
scheduler step carries the running requests' decode tokens and new requests' prompt tokens up to a token budget, and
takes

    step_ms + prompt tokens in the step × 1000 / prefill + decode tokens in the step × decode_token_ms

where `prefill` (tokens/s) is the spec's prefill rate, `step_ms` a fixed cost per step and `decode_token_ms` what
each decode token adds, so that a request decoding alone gets 1000 / (step_ms + decode_token_ms) = `decode` tokens/s.
The knobs' defaults come from assets/engines.toml (each with its source); `ttft-planner calibrate` measures the
costs.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from planner.asset_files import load_asset

__all__ = ["BATCHING_ENGINES", "ENGINES", "EngineProfile", "StepCosts", "profile", "profiles"]

#: Every engine a spec may name; the first is the slot model.
ENGINES = ("slots", "vllm", "sglang", "llama.cpp")
BATCHING_ENGINES = ENGINES[1:]


@dataclass(frozen=True)
class EngineProfile:
    """One engine's scheduler defaults (see assets/engines.toml): token budget per step (tokens), chunked prefill
    and mixed steps (0/1), running sequences per replica, KV block size (tokens), the fixed share of a lone
    decode step (fraction), with where they come from, and the prompt's last tokens run in a step after the rest
    (prompt_tail, tokens; 0 = none: planner.whatif.steps)."""

    key: str
    label: str
    max_num_batched_tokens: int
    chunked_prefill: int
    mixed: int
    slots: int
    block_size: int
    fixed_share: float
    source: str
    prompt_tail: int = 0


@cache
def profiles() -> dict[str, EngineProfile]:
    """The batching engines' profiles by key, from assets/engines.toml."""
    data = load_asset("engines.toml")
    return {
        e["key"]: EngineProfile(
            key=e["key"],
            label=e["label"],
            max_num_batched_tokens=int(e["max_num_batched_tokens"]),
            chunked_prefill=int(e["chunked_prefill"]),
            mixed=int(e["mixed"]),
            slots=int(e["slots"]),
            block_size=int(e["block_size"]),
            fixed_share=float(e["fixed_share"]),
            source=e["source"],
            prompt_tail=int(e.get("prompt_tail", 0)),
        )
        for e in data["engine"]
    }


def profile(key: str) -> EngineProfile:
    """The profile of batching engine `key`; raises KeyError naming the known engines."""
    try:
        return profiles()[key]
    except KeyError:
        raise KeyError(f"unknown engine {key!r}; one of {', '.join(ENGINES)}") from None


@dataclass(frozen=True)
class StepCosts:
    """What one scheduler step costs (ms): `step_ms` fixed, `prompt_token_ms` per prompt token in the step,
    `decode_token_ms` per decode token in the step."""

    step_ms: float
    prompt_token_ms: float
    decode_token_ms: float

    def lone_prompt_ms(self, prompt_tokens: float, decode_tokens: float, prompt_tail: int = 0) -> float:
        """A prompt's time from its first step to its first token when nothing else prefills (ms): one step with the
        prompt and `decode_tokens` running decodes, or two when the engine runs the prompt's last `prompt_tail`
        tokens in a step of their own (planner.whatif.steps)."""
        steps = 2 if 0 < prompt_tail < prompt_tokens else 1
        return self.step_time_ms(prompt_tokens, decode_tokens) + (steps - 1) * self.step_time_ms(0, decode_tokens)

    def scaled(self, factor: float) -> StepCosts:
        """Every cost × `factor` (a slower engine: factor > 1)."""
        return StepCosts(self.step_ms * factor, self.prompt_token_ms * factor, self.decode_token_ms * factor)

    def step_time_ms(self, prompt_tokens: float, decode_tokens: float) -> float:
        """The time of one step carrying these tokens (ms)."""
        return self.step_ms + self.prompt_token_ms * prompt_tokens + self.decode_token_ms * decode_tokens

    @classmethod
    def from_rates(cls, prefill_tokens_per_s: float, decode_tokens_per_s: float, step_ms: float) -> StepCosts:
        """Costs from a spec's rates: a lone request decodes one token a step at `decode_tokens_per_s`, so each decode
        token costs 1000 / decode − step_ms. Raises ValueError when step_ms is longer than a lone decode step."""
        lone_ms = 1000.0 / decode_tokens_per_s
        if step_ms > lone_ms * (1 + 1e-9):
            raise ValueError(
                f"step_ms {step_ms:g} is longer than a lone request's decode step ({lone_ms:.3g} ms at decode "
                f"{decode_tokens_per_s:g} tokens/s): lower step_ms or decode"
            )
        return cls(step_ms, 1000.0 / prefill_tokens_per_s, max(0.0, lone_ms - step_ms))
