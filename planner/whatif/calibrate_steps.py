"""Calibrating a batching engine's step model (planner.whatif.engines) on a live endpoint: what a step costs.

Two measurements, with the probe engine:

- **decode steps**: k long generations at once, for each k of the calibration's concurrencies (at most the engine's
  running sequences): once every one has its first token, each step carries k decode tokens, so the median time
  between a stream's tokens is one step, `step_ms + k × decode_token_ms`. A least-squares line over k gives the two
  (a line through one k has no slope: then the whole step is fixed cost);
- **prompts under a steady decode load**: `load` generations kept running while prompt probes go in one at a time.
  Each probe's TTFT is predicted by the step model — its RTT, half a decode step on average for the step in flight
  when it arrives, then one step of `step_ms + its prompt tokens × prompt_token_ms + load × decode_token_ms` — and the
  residual (measured ÷ predicted − 1) is reported: how well the step model explains a new request's first token while
  decodes run. These probes fit nothing: they are the check.

The prefill cost per token and the RTT come from the calibration's prefill rounds (planner.whatif.calibrate).
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from planner.probes.ttft import ProbeTarget, TtftSample

__all__ = ["StepFit", "decode_steps", "fit_step_line", "prompts_under_load"]

Probe = Callable[[ProbeTarget], Awaitable[TtftSample]]
_GOLDEN = 0.6180339887498949  # successive multiples mod 1 fill [0, 1) evenly


@dataclass(frozen=True)
class StepFit:
    """A batching engine's measured step costs and how well they predict prompts under load.

    step_ms: fixed cost of a step (ms); decode_token_ms: what each decode token adds to it (ms);
    itl_ms_by_running: the median time between a stream's tokens with k generations running, by k;
    residuals: measured ÷ predicted TTFT − 1 of each prompt probe sent under `load` running decodes.
    """

    step_ms: float
    decode_token_ms: float
    itl_ms_by_running: dict[int, float]
    load: int = 0
    residuals: tuple[float, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (kept with the calibration in the store: planner.store.calibrations)."""
        return {
            "step_ms": self.step_ms,
            "decode_token_ms": self.decode_token_ms,
            "itl_ms_by_running": {str(k): v for k, v in self.itl_ms_by_running.items()},
            "load": self.load,
            "residuals": list(self.residuals),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StepFit:
        """The fit to_dict wrote; raises ValueError (or KeyError, TypeError) for one it did not."""
        return cls(
            float(d["step_ms"]),
            float(d["decode_token_ms"]),
            {int(k): float(v) for k, v in d["itl_ms_by_running"].items()},
            int(d.get("load", 0)),
            tuple(float(r) for r in d.get("residuals", ())),
        )

    @property
    def line_residuals(self) -> dict[int, float]:
        """Each measured step time ÷ the fitted line's − 1, by running decodes: how straight the line is."""
        out = {}
        for k, itl in self.itl_ms_by_running.items():
            line = self.step_ms + self.decode_token_ms * k
            out[k] = itl / line - 1 if line > 0 else 0.0
        return out

    @property
    def median_abs_residual(self) -> float | None:
        """The median |measured ÷ predicted − 1| of the prompts under load (None without any)."""
        return statistics.median(abs(r) for r in self.residuals) if self.residuals else None

    def describe(self) -> str:
        """'step 12.0 ms + 3.1 ms a decode token (steps of 15, 21, 34 ms with 1, 2, 4 running); prompts under 4
        running decodes within ±6 % of the step model (median of 10)'."""
        itl = ", ".join(f"{v:,.1f}" for v in self.itl_ms_by_running.values())
        ks = ", ".join(str(k) for k in self.itl_ms_by_running)
        text = (
            f"step {self.step_ms:,.1f} ms + {self.decode_token_ms:,.2f} ms a decode token (steps of {itl} ms with "
            f"{ks} running)"
        )
        med = self.median_abs_residual
        if med is not None:
            text += (
                f"; prompts under {self.load} running decodes within ±{med:.0%} of the step model "
                f"(median of {len(self.residuals)})"
            )
        return text


def fit_step_line(itl_ms_by_running: dict[int, float]) -> tuple[float, float]:
    """(step_ms, decode_token_ms) of the least-squares line itl = step_ms + k × decode_token_ms over the measured
    k; with one k, or a line that falls, the whole step is fixed cost; a negative intercept is clipped to 0 (the
    decode tokens then carry the step)."""
    ks = list(itl_ms_by_running)
    ys = [itl_ms_by_running[k] for k in ks]
    if len(ks) < 2:
        return (ys[0], 0.0) if ys else (0.0, 0.0)
    mk, my = statistics.fmean(ks), statistics.fmean(ys)
    sxx = sum((k - mk) ** 2 for k in ks)
    slope = sum((k - mk) * (y - my) for k, y in zip(ks, ys, strict=True)) / sxx
    if slope <= 0:
        return my, 0.0
    icpt = my - slope * mk
    if icpt < 0:
        return 0.0, my / mk
    return icpt, slope


def _itl_ms(s: TtftSample) -> float | None:
    """The mean time between a stream's tokens after its first (ms), or None."""
    if not s.ok or not s.output_tokens or s.output_tokens < 3 or s.total_ms is None or s.ttft_ms is None:
        return None
    return (s.total_ms - s.ttft_ms) / (s.output_tokens - 1)


async def decode_steps(
    target: ProbeTarget, probe: Probe, running: Sequence[int], prompt_tokens: int, decode_tokens: int
) -> dict[int, float]:
    """The median time between tokens (ms) of `k` generations started together, for each k in `running`; a k whose
    streams all failed is left out. The k streams' prompts are short, so the decode steps dominate."""
    out: dict[int, float] = {}
    t = replace(target, prompt_tokens=prompt_tokens, max_tokens=decode_tokens)
    for k in running:
        samples = await asyncio.gather(*(probe(t) for _ in range(k)))
        itls = [x for x in (_itl_ms(s) for s in samples) if x is not None]
        if itls:
            out[k] = statistics.median(itls)
    return out


async def prompts_under_load(
    target: ProbeTarget,
    probe: Probe,
    *,
    load: int,
    lengths: Sequence[int],
    n: int,
    background_tokens: int,
    settle_s: float,
    step_s: float = 0.0,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> list[TtftSample]:
    """Prompt probes (`n` at each of `lengths`, one at a time, max_tokens 1) while `load` long generations run; the
    generations are cancelled (their connections closed) once the probes are done. `settle_s`: wait this long after
    starting them, so that their prompts are done and only their decodes run. Each probe waits a different fraction
    of `step_s` (a decode step, s) first, so that probes arrive at every phase of the step in flight, as a user's
    requests do, not always just after the step that answered the previous one."""
    bg_target = replace(target, prompt_tokens=min(lengths), max_tokens=background_tokens)
    background = [asyncio.ensure_future(probe(bg_target)) for _ in range(load)]
    try:
        await sleep(settle_s)
        samples = []
        for i in range(n * len(lengths)):
            await sleep(step_s * ((i + 1) * _GOLDEN % 1.0))  # phases spread evenly over the step
            length = lengths[i % len(lengths)]
            samples.append(await probe(replace(target, prompt_tokens=length, max_tokens=1)))
        return samples
    finally:
        for task in background:
            task.cancel()
        await asyncio.gather(*background, return_exceptions=True)
