"""The simulated endpoint's continuous-batching mode (`batching=True`): one scheduler runs steps, as vLLM does.

Requests join the scheduler with their uncached prompt tokens and the tokens they will generate. While any is
joined, the scheduler runs steps back to back: each step carries one decode token of every running request that has
its first token, then prompt chunks of the running others, then admits waiting requests in arrival order while fewer
than `slots` run, first come first served, up to `max_batched_tokens` (chunked prefill); it lasts

    (step_ms + prompt tokens × 1000 / prefill_tokens_per_s + decode tokens × (1000 / decode_tokens_per_s − step_ms))
    × the engine's speed factor (SimEngine.speed_factor: its drift)

in simulated time, and at its end every request whose prompt finished gets its first token and every decoding
request its next one; a request that has all its tokens leaves, so the next step can admit a waiting one. A request
joining during a step waits for the next. This is the model planner.whatif.steps
replays, served over real HTTP (or in virtual time): what `calibrate` measures its step costs on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Sequence", "StepScheduler"]


@dataclass(eq=False)
class Sequence:
    """One request in the scheduler: prompt tokens left to prefill, tokens left to generate, and a queue that gets
    one item per token (the first when its prompt's last chunk's step ends)."""

    prompt_left: float
    tokens_left: int
    tokens: asyncio.Queue[None] = field(default_factory=asyncio.Queue)
    gone: bool = False
    admitted: bool = False

    @property
    def decoding(self) -> bool:
        return self.prompt_left <= 0


class StepScheduler:
    """Runs steps while sequences are joined (see the module docstring). `sleep` waits simulated seconds;
    `factor` is the speed factor at the step's start (1 = as configured)."""

    def __init__(
        self,
        *,
        step_ms: float,
        prompt_token_ms: float,
        decode_token_ms: float,
        max_batched_tokens: int,
        max_seqs: int,
        sleep: Callable[[float], Coroutine[Any, Any, None]],
        factor: Callable[[], float],
    ) -> None:
        self._step_ms = step_ms
        self._prompt_ms = prompt_token_ms
        self._decode_ms = decode_token_ms
        self._budget = max_batched_tokens
        self._max_seqs = max_seqs
        self._sleep = sleep
        self._factor = factor
        self._seqs: list[Sequence] = []
        self._task: asyncio.Task[None] | None = None
        self.steps = 0

    def join(self, prompt_tokens: float, output_tokens: int) -> Sequence:
        """Add a request (its uncached prompt tokens, at least 1 computed, and its output tokens, at least 1)."""
        seq = Sequence(max(1.0, prompt_tokens), max(1, output_tokens))
        self._seqs.append(seq)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())
        return seq

    def leave(self, seq: Sequence) -> None:
        """Drop a request (done, or its client went away)."""
        seq.gone = True
        if seq in self._seqs:
            self._seqs.remove(seq)

    @property
    def running(self) -> int:
        """Requests admitted (prefilling or decoding)."""
        return sum(s.admitted for s in self._seqs)

    @property
    def waiting(self) -> int:
        """Requests joined but not admitted yet."""
        return len(self._seqs) - self.running

    async def _run(self) -> None:
        while self._seqs:
            decoding = [s for s in self._seqs if s.admitted and s.decoding]
            running = self.running
            left: float = self._budget - len(decoding)
            prompt = 0.0
            finishing: list[Sequence] = []
            for s in self._seqs:  # in arrival order: the admitted ones come before the waiting ones
                if s.decoding or left <= 0:
                    continue
                if not s.admitted:
                    if running >= self._max_seqs:
                        break
                    s.admitted = True
                    running += 1
                take = min(s.prompt_left, left)
                s.prompt_left -= take
                prompt += take
                left -= take
                if s.prompt_left <= 0:
                    finishing.append(s)
            step_ms = self._step_ms + self._prompt_ms * prompt + self._decode_ms * len(decoding)
            await self._sleep(step_ms * self._factor() / 1000.0)
            self.steps += 1
            for s in decoding + finishing:
                if s.gone:
                    continue
                s.tokens_left -= 1
                s.tokens.put_nowait(None)
                if s.tokens_left <= 0:
                    self.leave(s)
