"""The four-segment TTFT worksheet: model and arithmetic.

TTFT p95 target = queueing + weight loading (cold start) + prefill + network.
Subtract the three non-prefill segments from the target: what is left is the
prefill budget. If it is negative, no model choice fixes it.

Units are in every name: *_ms milliseconds, *_tokens tokens, *_tokens_per_s
tokens per second, *_fraction a number in [0, 1].
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from planner.errors import PlannerError
from planner.worksheet.interactions import interactions
from planner.worksheet.provenance import Figure

__all__ = [
    "BudgetError",
    "BudgetResult",
    "SEGMENTS",
    "Worksheet",
    "cold_start_share",
    "compute",
    "compute_worksheet",
    "inter_token_ms",
    "stream_duration_s",
    "verdict_text",
]

# The three segments entered or measured; prefill is what remains.
SEGMENTS: dict[str, str] = {
    "queue_ms": "Admission / queueing",
    "cold_ms": "Weight loading (cold start)",
    "network_ms": "Network / first-token delivery",
}


class BudgetError(PlannerError, ValueError):
    """An input the worksheet cannot use; the message names the field and the fix."""


@dataclass(frozen=True)
class Worksheet:
    """Inputs of one worksheet. Every number is a Figure so it can carry provenance.

    targets_ms maps interaction key → p95 target; it starts from the presets and
    the user can edit or add entries. `interaction` picks the one in force.
    """

    name: str = "Untitled"
    interaction: str = "chat"
    targets_ms: dict[str, float] = field(default_factory=lambda: {i.key: i.target_p95_ms for i in interactions()})
    target_labels: dict[str, str] = field(default_factory=lambda: {i.key: i.label for i in interactions()})
    queue_ms: Figure = field(default_factory=lambda: Figure.typed(60, "ms"))
    cold_ms: Figure = field(default_factory=lambda: Figure.typed(0, "ms"))
    network_ms: Figure = field(default_factory=lambda: Figure.typed(80, "ms"))
    prefill_tokens_per_s: Figure = field(default_factory=lambda: Figure.typed(12000, "tokens/s"))
    prompt_tokens_p95: Figure = field(default_factory=lambda: Figure.typed(4000, "tokens"))
    cache_hit_fraction: Figure = field(default_factory=lambda: Figure.typed(0.5, "fraction"))
    notes: str = ""

    @property
    def target_ms(self) -> float:
        try:
            return self.targets_ms[self.interaction]
        except KeyError:
            raise BudgetError(
                f"unknown interaction type {self.interaction!r}; known: {', '.join(self.targets_ms)}"
            ) from None

    def segment(self, key: str) -> Figure:
        """The Figure for one of SEGMENTS' keys."""
        if key not in SEGMENTS:
            raise KeyError(key)
        return getattr(self, key)

    def with_figure(self, key: str, figure: Figure) -> Worksheet:
        """A copy with one figure replaced (a segment, rate, prompt length or cache hit)."""
        changes: dict[str, Any] = {key: figure}
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "interaction": self.interaction,
            "targets_ms": dict(self.targets_ms),
            "target_labels": dict(self.target_labels),
            "queue_ms": self.queue_ms.to_dict(),
            "cold_ms": self.cold_ms.to_dict(),
            "network_ms": self.network_ms.to_dict(),
            "prefill_tokens_per_s": self.prefill_tokens_per_s.to_dict(),
            "prompt_tokens_p95": self.prompt_tokens_p95.to_dict(),
            "cache_hit_fraction": self.cache_hit_fraction.to_dict(),
            "notes": self.notes,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Worksheet:
        """Inverse of to_dict; missing keys take defaults, malformed ones raise BudgetError."""
        base = cls()
        try:
            kwargs: dict[str, Any] = {
                "name": str(d.get("name", base.name)),
                "interaction": str(d.get("interaction", base.interaction)),
                "targets_ms": {str(k): float(v) for k, v in d.get("targets_ms", base.targets_ms).items()},
                "target_labels": {str(k): str(v) for k, v in d.get("target_labels", base.target_labels).items()},
                "notes": str(d.get("notes", "")),
            }
            for key in (
                "queue_ms",
                "cold_ms",
                "network_ms",
                "prefill_tokens_per_s",
                "prompt_tokens_p95",
                "cache_hit_fraction",
            ):
                kwargs[key] = Figure.from_dict(d[key]) if key in d else getattr(base, key)
        except (AttributeError, TypeError, ValueError) as exc:
            raise BudgetError(f"worksheet record is malformed: {exc}") from exc
        return cls(**kwargs)


@dataclass(frozen=True)
class BudgetResult:
    """What the worksheet shows: the prefill budget, whether the prompt fits, and the verdict."""

    target_ms: float
    queue_ms: float
    cold_ms: float
    network_ms: float
    prefill_budget_ms: float
    culprit_segment: str | None  # SEGMENTS key of the largest non-prefill segment, when over budget
    uncached_prompt_tokens: float
    prefill_needed_ms: float
    max_prompt_tokens_p95: float  # math.inf when every token is cached
    prompt_fits: bool
    cache_hit_fraction: float = 0.0

    @property
    def max_uncached_prompt_tokens(self) -> float:
        """The largest uncached part of the p95 prompt that fits the budget: budget_s × prefill rate."""
        if math.isnan(self.max_prompt_tokens_p95) or self.max_prompt_tokens_p95 <= 0:
            return self.max_prompt_tokens_p95
        if self.cache_hit_fraction >= 1.0:
            return math.inf
        return self.max_prompt_tokens_p95 * (1.0 - self.cache_hit_fraction)

    @property
    def budget_negative(self) -> bool:
        return self.prefill_budget_ms < 0

    @property
    def prefill_headroom_ms(self) -> float:
        return self.prefill_budget_ms - self.prefill_needed_ms


def _check_ms(name: str, value: float) -> float:
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise BudgetError(f"{name} must be a number of milliseconds, got {value!r}")
    if math.isinf(value):
        raise BudgetError(f"{name} must be finite, got {value!r}")
    if value < 0:
        raise BudgetError(f"{name} cannot be negative (got {value:g} ms)")
    return float(value)


def compute(
    target_ms: float,
    queue_ms: float,
    cold_ms: float,
    network_ms: float,
    prefill_tokens_per_s: float | None = None,
    prompt_tokens_p95: float | None = None,
    cache_hit_fraction: float = 0.0,
) -> BudgetResult:
    """Prefill budget = target − (queue + cold + network), and whether the p95 prompt fits.

    Only uncached prompt tokens cost prefill: uncached = p95 tokens × (1 − cache hit).
    The largest p95 prompt that fits = budget_s × rate / (1 − cache hit).
    Raises BudgetError for negative/non-numeric inputs, a target of zero, a
    prefill rate ≤ 0, or a cache-hit fraction outside [0, 1].
    """
    target_ms = _check_ms("target", target_ms)
    if target_ms == 0:
        raise BudgetError("target must be greater than 0 ms")
    queue_ms = _check_ms("queueing", queue_ms)
    cold_ms = _check_ms("weight loading", cold_ms)
    network_ms = _check_ms("network", network_ms)
    if not 0.0 <= cache_hit_fraction <= 1.0:
        raise BudgetError(f"cache-hit rate must be between 0 and 1, got {cache_hit_fraction:g}")
    budget_ms = target_ms - (queue_ms + cold_ms + network_ms)
    segments = {"queue_ms": queue_ms, "cold_ms": cold_ms, "network_ms": network_ms}
    culprit = max(segments, key=segments.__getitem__) if budget_ms < 0 else None

    if prefill_tokens_per_s is None or prompt_tokens_p95 is None:
        return BudgetResult(
            target_ms, queue_ms, cold_ms, network_ms, budget_ms, culprit, math.nan, math.nan, math.nan, budget_ms >= 0
        )
    if prefill_tokens_per_s <= 0 or math.isnan(prefill_tokens_per_s):
        raise BudgetError(f"prefill rate must be greater than 0 tokens/s, got {prefill_tokens_per_s:g}")
    if prompt_tokens_p95 < 0 or math.isnan(prompt_tokens_p95):
        raise BudgetError(f"p95 prompt tokens cannot be negative, got {prompt_tokens_p95:g}")
    uncached = prompt_tokens_p95 * (1.0 - cache_hit_fraction)
    needed_ms = uncached / prefill_tokens_per_s * 1000.0
    if budget_ms <= 0:
        max_tokens = 0.0
    elif cache_hit_fraction >= 1.0:
        max_tokens = math.inf
    else:
        max_tokens = budget_ms / 1000.0 * prefill_tokens_per_s / (1.0 - cache_hit_fraction)
    fits = budget_ms >= 0 and needed_ms <= budget_ms
    return BudgetResult(
        target_ms,
        queue_ms,
        cold_ms,
        network_ms,
        budget_ms,
        culprit,
        uncached,
        needed_ms,
        max_tokens,
        fits,
        cache_hit_fraction,
    )


def compute_worksheet(ws: Worksheet) -> BudgetResult:
    """compute() over a Worksheet's figures, for the interaction in force."""
    return compute(
        ws.target_ms,
        ws.queue_ms.value,
        ws.cold_ms.value,
        ws.network_ms.value,
        ws.prefill_tokens_per_s.value,
        ws.prompt_tokens_p95.value,
        ws.cache_hit_fraction.value,
    )


def verdict_text(r: BudgetResult) -> tuple[str, str]:
    """(level, sentence) for the page and the CLI; level is 'ok', 'warn' or 'error'."""
    if r.budget_negative:
        name = SEGMENTS[r.culprit_segment].lower() if r.culprit_segment else "the other segments"
        seg_ms = getattr(r, r.culprit_segment) if r.culprit_segment else 0
        return (
            "error",
            f"Over budget by {-r.prefill_budget_ms:,.0f} ms before prefill even starts: no model choice can fix this. "
            f"{name.capitalize()} ({seg_ms:,.0f} ms) ate the budget — fix that segment first.",
        )
    if math.isnan(r.prefill_needed_ms):
        return "ok", f"{r.prefill_budget_ms:,.0f} ms remain for prefill."
    if r.prompt_fits:
        return (
            "ok",
            f"{r.prefill_budget_ms:,.0f} ms remain for prefill; the p95 prompt needs {r.prefill_needed_ms:,.0f} ms "
            f"({r.prefill_headroom_ms:,.0f} ms headroom).",
        )
    if r.cache_hit_fraction > 0:
        shrink = (
            f"Shrink the uncached part of the p95 prompt to {r.max_uncached_prompt_tokens:,.0f} tokens "
            f"(a {r.max_prompt_tokens_p95:,.0f}-token p95 prompt at a {r.cache_hit_fraction:.0%} cache-hit rate)"
        )
    else:
        shrink = f"Shrink the p95 prompt to {r.max_prompt_tokens_p95:,.0f} tokens (none of it is cached)"
    return (
        "warn",
        f"{r.prefill_budget_ms:,.0f} ms remain for prefill, "
        f"but the p95 prompt's {r.uncached_prompt_tokens:,.0f} uncached "
        f"tokens need {r.prefill_needed_ms:,.0f} ms. {shrink}, raise the cache-hit rate, or buy a faster prefill.",
    )


def inter_token_ms(tokens_per_s: float) -> float:
    """Time between streamed tokens: 43 tok/s → ~23 ms."""
    if tokens_per_s <= 0:
        raise BudgetError("decode rate must be greater than 0 tokens/s")
    return 1000.0 / tokens_per_s


def stream_duration_s(output_tokens: float, tokens_per_s: float) -> float:
    """Steady-state streaming time of a block: 400 tokens at 43 tok/s → ~9.3 s."""
    return output_tokens * inter_token_ms(tokens_per_s) / 1000.0


def cold_start_share(cold_start_s: float, stream_s: float) -> float:
    """How much longer a response takes with a cold start in front: 2 s on 9.3 s → ~0.22."""
    if stream_s <= 0:
        raise BudgetError("stream duration must be greater than 0 s")
    return cold_start_s / stream_s
