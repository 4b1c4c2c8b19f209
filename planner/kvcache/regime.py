"""The regime a deployment lands in: hit rate, uncached prompt and predicted TTFT as KV capacity grows, per routing.

Below the knee, cache pressure evicts prefixes before they are reused and the hit rate climbs with capacity; past
it, more KV memory buys nothing (the trace's own reuse is the ceiling). Each point is replayed under the engine's
own eviction rule (planner.logs.prefix: vLLM frees tail first, SGLang evicts radix leaves), which decides how much a
pressured cache keeps of the prefixes prompts share, and so where the knee falls. The knee is the smallest capacity
whose hit rate is within 95 % of the unpressured one (the largest capacity swept). `sentence` says it for a lead to
forward.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from planner.kvcache.capacity import KvCapacity
from planner.kvcache.chains import PrefixTrace
from planner.kvcache.simulate import Engine, Eviction, PrefixRun, Routing, ServiceRates, simulate

__all__ = [
    "RULE_WORDS",
    "RegimePoint",
    "Study",
    "capacity_grid",
    "deployment_name",
    "knee",
    "regime",
    "sentence",
    "study",
]

KNEE_SHARE = 0.95


@dataclass(frozen=True)
class RegimePoint:
    routing: str
    replicas: int
    capacity_tokens: int  # KV tokens per replica
    hit_rate: float
    request_hit_fraction: float
    uncached_p50: float | None
    uncached_p95: float | None
    ttft_p50_ms: float | None
    ttft_p95_ms: float | None
    fully_cached: int = 0  # requests whose every full block was a hit
    requests: int = 0
    eviction: str = ""  # the rule the replicas evicted by ("" for llama.cpp's slots)

    @classmethod
    def of(cls, run: PrefixRun) -> RegimePoint:
        return cls(
            str(run.routing),
            run.replicas,
            run.capacity_blocks * run.block_tokens,
            run.hit_rate,
            run.request_hit_fraction,
            run.uncached_p(0.5).value,
            run.uncached_p(0.95).value,
            run.ttft_p(0.5).value,
            run.ttft_p(0.95).value,
            run.fully_cached,
            len(run.cached_tokens),
            "" if run.eviction is None else run.eviction.value,
        )


def capacity_grid(trace: PrefixTrace, around_tokens: int | None = None, points: int = 9) -> list[int]:
    """KV tokens per replica to sweep: `points` steps, doubling, up to the trace's distinct blocks (no pressure
    past that), with the deployment's own capacity among them."""
    distinct = len({b for r in trace.requests for b in r.blocks}) or 1
    top = distinct * trace.block_tokens
    grid = {max(trace.block_tokens, (top >> k) // trace.block_tokens * trace.block_tokens) for k in range(points)}
    if around_tokens:
        grid.add(max(trace.block_tokens, around_tokens // trace.block_tokens * trace.block_tokens))
    return sorted(grid)


def regime(
    trace: PrefixTrace,
    capacities_tokens: Sequence[int],
    replicas: Sequence[int],
    routings: Sequence[Routing | str],
    rates: ServiceRates | None = None,
    engine: Engine | str = Engine.VLLM,
    slots: int = 4,
    eviction: Eviction | str | None = None,
) -> list[RegimePoint]:
    """One point per (routing, replicas, capacity), on `engine` (planner.kvcache.simulate.Engine) under `eviction`
    (default: the engine's rule)."""
    out = []
    for routing in routings:
        for n in replicas:
            for tokens in capacities_tokens:
                blocks = max(1, tokens // trace.block_tokens)
                run = simulate(
                    trace.requests,
                    replicas=n,
                    capacity_blocks=blocks,
                    block_tokens=trace.block_tokens,
                    routing=routing,
                    rates=rates,
                    engine=engine,
                    slots=slots,
                    eviction=eviction,
                )
                out.append(RegimePoint.of(run))
    return out


def knee(points: Sequence[RegimePoint]) -> int | None:
    """The smallest capacity (tokens per replica) whose hit rate is within KNEE_SHARE of the largest capacity's,
    for points of one routing and replica count; None without points."""
    if not points:
        return None
    ordered = sorted(points, key=lambda p: p.capacity_tokens)
    best = ordered[-1].hit_rate
    return next(p.capacity_tokens for p in ordered if p.hit_rate >= KNEE_SHARE * best)


def _pct(x: float) -> str:
    return f"{x:.0%}"


def _ms(x: float | None) -> str:
    return "—" if x is None else f"{x:,.0f} ms"


#: How the sentence names each eviction rule (RegimePoint.eviction; "" is llama.cpp's slots).
RULE_WORDS = {
    "tail-first": "each replica's cache frees a request's blocks tail first, as vLLM does",
    "radix-leaf": "each replica's cache evicts radix-tree leaves first, as SGLang does",
    "lru": "each replica's cache evicts by plain LRU, a prompt's first block first (no engine does)",
    "": "each replica keeps one sequence per llama.cpp slot",
}


def sentence(at: dict[tuple[str, int], RegimePoint], deployment: str, replicas: int) -> str:
    """A lead's sentence from points at the deployment's capacity, keyed (routing, replicas): round-robin against
    session affinity (or prefix-aware routing without session ids), whether one more replica helps, and the eviction
    rule it all assumes."""
    rr = at.get((Routing.ROUND_ROBIN.value, replicas))
    if rr is None:
        return ""
    aff = at.get((Routing.SESSION.value, replicas))
    pre = at.get((Routing.PREFIX.value, replicas))
    text = (
        f"On {deployment} with round-robin routing your hit rate is {_pct(rr.hit_rate)} and p95 prefill "
        f"{_ms(rr.ttft_p95_ms)}"
    )
    better = max((p for p in (aff, pre) if p is not None), key=lambda p: p.hit_rate, default=None)
    if better is not None and better.hit_rate > rr.hit_rate + 0.01:
        name = "session affinity" if better is aff else "prefix-aware routing"
        text += f"; with {name} it is {_pct(better.hit_rate)} and {_ms(better.ttft_p95_ms)}"
    else:
        better = None
        text += "; session or prefix-aware routing does not change it"
    more = at.get((Routing.ROUND_ROBIN.value, replicas + 1))
    if more is not None:
        nth = {2: "second", 3: "third", 4: "fourth", 5: "fifth"}.get(replicas + 1, f"{replicas + 1}th")
        if more.hit_rate <= rr.hit_rate + 0.01 and better is not None:
            text += f"; a {nth} replica does not help until routing changes"
        elif more.hit_rate > rr.hit_rate + 0.01:
            text += f"; a {nth} replica raises it to {_pct(more.hit_rate)} ({_ms(more.ttft_p95_ms)})"
        else:
            text += f"; a {nth} replica does not change it"
    return f"{text} ({RULE_WORDS.get(rr.eviction, rr.eviction)})."


def deployment_name(replicas: int, cap: KvCapacity) -> str:
    """The deployment as the sentence names it: '2 replicas of 2× L40S 48GB (Qwen2.5-Coder 32B)'."""
    return f"{replicas} replica{'s' if replicas > 1 else ''} of {cap.gpus_per_replica}× {cap.gpu} ({cap.model})"


@dataclass(frozen=True)
class Study:
    """What the command and the Prefix cache tab show for a trace and a deployment."""

    sweep: list[RegimePoint]  # over capacity_grid, at the first replica count
    at_capacity: list[RegimePoint]  # at the deployment's capacity: each replica count, and one more than the last
    knees: dict[str, int | None]  # routing → its knee (tokens per replica)

    def sentence(self, deployment: str, replicas: int) -> str:
        return sentence({(p.routing, p.replicas): p for p in self.at_capacity}, deployment, replicas)


def study(
    trace: PrefixTrace,
    capacity_tokens: int | None,
    replicas: Sequence[int],
    routings: Sequence[Routing | str],
    rates: ServiceRates | None = None,
    engine: Engine | str = Engine.VLLM,
    slots: int = 4,
    eviction: Eviction | str | None = None,
) -> Study:
    """The regime swept at the first replica count (capacity_grid, with the deployment's capacity among the points),
    the points at the deployment's capacity (none without one), and each routing's knee; every replica evicting by
    `eviction` (default: `engine`'s rule)."""
    names = [Routing(r).value for r in routings]
    sweep = regime(trace, capacity_grid(trace, capacity_tokens), replicas[:1], names, rates, engine, slots, eviction)
    at_cap = (
        regime(trace, [capacity_tokens], [*replicas, replicas[-1] + 1], names, rates, engine, slots, eviction)
        if capacity_tokens
        else []
    )
    return Study(sweep, at_cap, {r: knee([p for p in sweep if p.routing == r]) for r in names})
