"""Candidate deployments for the what-if replay, and the CLI's `--deployment SPEC` parser.

Two shapes:

- `Serverless`: replicas start on demand (a cold start of `cold_start_s`), serve up to
  `slots_per_replica` requests at once each, scale down after `scale_down_window_s` idle,
  never more than `max_replicas` (and never fewer than `min_replicas`, kept warm).
  Priced per million tokens and/or per warm GPU-hour.
- `Dedicated`: a fixed number of always-warm replicas priced per GPU-hour, optionally with
  a serverless overflow pool that takes the requests finding no free dedicated slot.

Every rate is a `planner.worksheet.provenance.Figure` so a value measured elsewhere (a probe's prefill
slope, a cold reading) keeps its provenance; `parse_deployment` makes typed figures.
Rates are per slot: a request in a slot prefills at `prefill_tokens_per_s` and decodes at
`decode_tokens_per_s` whatever the other slots do (see docs/whatif-model.md); a batching engine's (`engine=`) are
the engine's, shared by the requests of one step (planner.whatif.engines).

Over 400 lines: the candidate shapes, their key tables and the spec grammar that fills them are one vocabulary read
by the CLI, the page and every test through this module; the engine profiles and step costs live in
planner.whatif.engines.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from planner.errors import PlannerError
from planner.inputs.validate import (
    BATCHED_TOKENS,
    GPUS_PER_REPLICA,
    KV_BLOCK_TOKENS,
    MIN_REPLICAS,
    REPLICAS,
    STEP_MS,
    SWITCH,
    USD_PER_MTOK,
    Rule,
)
from planner.kvcache.simulate import Eviction, Routing
from planner.whatif.engines import BATCHING_ENGINES, ENGINES, StepCosts, profile
from planner.worksheet.provenance import Figure

__all__ = [
    "BATCHING_KEYS",
    "DEDICATED_KEYS",
    "Dedicated",
    "Deployment",
    "KEY_RULES",
    "MAX_POOL_SLOTS",
    "NAMED_KEYS",
    "SERVERLESS_KEYS",
    "Serverless",
    "SpecError",
    "defaults_from_worksheet",
    "defaults_taken",
    "parse_deployment",
]


class SpecError(PlannerError, ValueError):
    """A deployment spec the replay cannot use; the message names the spec and the key."""


@dataclass(frozen=True)
class Serverless:
    """A scale-to-zero (or scale-to-min) pool of replicas.

    scale_down_window_s: idle seconds before a replica is released (s).
    cold_start_s: seconds from a scale-up decision until the replica serves (s).
    prefill_tokens_per_s / decode_tokens_per_s: per-slot rates (tokens/s).
    rtt_ms: network round trip added once to every TTFT (ms).
    prompt_overhead_tokens: tokens the server prefills on top of each logged prompt (chat template, system
        prompt, a probe's nonce): they hold the slot like the prompt does (tokens; 0 = none).
    price_usd_per_mtok: price per million tokens billed (prompt incl. cached + output).
    usd_per_gpu_h: price per warm GPU-hour (billed per GPU-second), 0 when priced per token.
    speed_sd: how much the serving speed level (prefill and decode together) varies from one run to the next, as
        the standard deviation of its logarithm (fraction: 0.15 ≈ ±15 %; `ttft-planner calibrate` measures it from
        the spread of its rounds); request_sd: the same for one request against the next within a run. Both 0 =
        a fixed speed; they widen the prediction interval (planner.whatif.interval), not the point prediction.
    """

    name: str
    scale_down_window_s: Figure
    cold_start_s: Figure
    slots_per_replica: int
    max_replicas: int
    prefill_tokens_per_s: Figure
    decode_tokens_per_s: Figure
    rtt_ms: Figure = field(default_factory=lambda: Figure.typed(0, "ms"))
    price_usd_per_mtok: Figure = field(default_factory=lambda: Figure.typed(0, "USD/Mtok"))
    min_replicas: int = 0
    gpus_per_replica: int = 1
    usd_per_gpu_h: Figure = field(default_factory=lambda: Figure.typed(0, "USD/GPU-h"))
    prompt_overhead_tokens: Figure = field(default_factory=lambda: Figure.typed(0, "tokens"))
    speed_sd: Figure = field(default_factory=lambda: Figure.typed(0, "fraction"))
    request_sd: Figure = field(default_factory=lambda: Figure.typed(0, "fraction"))

    kind = "serverless"

    def __post_init__(self) -> None:
        _check_counts(self.name, slots=self.slots_per_replica, max=self.max_replicas, gpus=self.gpus_per_replica)
        if not 0 <= self.min_replicas <= self.max_replicas:
            raise SpecError(
                f"{self.name}: min replicas must be between 0 and max ({self.max_replicas}), got {self.min_replicas}"
            )
        _check_rates(self.name, prefill=self.prefill_tokens_per_s, decode=self.decode_tokens_per_s)
        _check_non_negative(
            self.name,
            window=self.scale_down_window_s,
            cold=self.cold_start_s,
            rtt=self.rtt_ms,
            usd_per_mtok=self.price_usd_per_mtok,
            usd_per_gpu_h=self.usd_per_gpu_h,
            overhead_tokens=self.prompt_overhead_tokens,
        )
        _check_rules(self, SERVERLESS_KEYS)

    @property
    def max_slots(self) -> int:
        """Most requests in service at once (slots × max replicas)."""
        return self.slots_per_replica * self.max_replicas


@dataclass(frozen=True)
class Dedicated:
    """Always-warm replicas priced per GPU-hour, with an optional serverless overflow pool.

    usd_per_gpu_h × gpus_per_replica × replicas is the hourly bill (USD/h), whatever the load.
    overflow: requests that find every dedicated slot busy on arrival go there instead of queueing.
    prompt_overhead_tokens: as for Serverless (tokens the server prefills on top of each logged prompt).
    speed_sd / request_sd: as for Serverless (how much the serving speed varies; 0 = a fixed speed).
    engine: "slots" (independent slots, FIFO across the pool) or a continuous-batching engine ("vllm", "sglang",
        "llama.cpp") replayed step by step (planner.whatif.steps), whose knobs are: slots = most sequences running
        per replica; max_num_batched_tokens = token budget of one step (tokens); chunked_prefill, mixed (0/1);
        block_size (tokens) and kv_blocks (KV cache blocks per replica, 0 = not limiting); step_ms = fixed cost of a
        step (ms; None: the engine profile's share of a lone decode step); prompt_tail = a prompt's last tokens run in
        a step after the rest of it (tokens; llama.cpp on a model it checkpoints: 4). See planner.whatif.engines.
    routing: how a router spreads requests over the replicas ("round-robin", "least-loaded", "session", "prefix",
        as `ttft-planner prefix` replays them); set, each replica keeps its own prefix cache (planner.whatif.routing)
        and queues its own requests. None: one FIFO queue over every slot and the log's cached tokens, as before.
    eviction: the replicas' cache rule ("tail-first", "radix-leaf", "lru"; None: the engine's own, vLLM's
        tail-first for the slot model). See planner.logs.prefix.
    """

    name: str
    replicas: int
    slots_per_replica: int
    prefill_tokens_per_s: Figure
    decode_tokens_per_s: Figure
    usd_per_gpu_h: Figure
    gpus_per_replica: int = 1
    rtt_ms: Figure = field(default_factory=lambda: Figure.typed(0, "ms"))
    overflow: Serverless | None = None
    prompt_overhead_tokens: Figure = field(default_factory=lambda: Figure.typed(0, "tokens"))
    speed_sd: Figure = field(default_factory=lambda: Figure.typed(0, "fraction"))
    request_sd: Figure = field(default_factory=lambda: Figure.typed(0, "fraction"))
    engine: str = "slots"
    max_num_batched_tokens: int = 8192
    chunked_prefill: int = 1
    mixed: int = 1
    block_size: int = 16
    kv_blocks: int = 0
    step_ms: Figure | None = None
    prompt_tail: int = 0
    routing: str | None = None
    eviction: str | None = None

    kind = "dedicated"

    def __post_init__(self) -> None:
        _check_counts(self.name, replicas=self.replicas, slots=self.slots_per_replica, gpus=self.gpus_per_replica)
        _check_rates(self.name, prefill=self.prefill_tokens_per_s, decode=self.decode_tokens_per_s)
        _check_non_negative(
            self.name, usd_per_gpu_h=self.usd_per_gpu_h, rtt=self.rtt_ms, overhead_tokens=self.prompt_overhead_tokens
        )
        if self.engine not in ENGINES:
            raise SpecError(f"{self.name}: engine must be one of {', '.join(ENGINES)}, got {self.engine!r}")
        _check_rules(self, DEDICATED_KEYS)
        _check_routing(self)
        if self.overflow is not None and self.max_slots > MAX_POOL_SLOTS:
            raise SpecError(f"{self.name}: {self.max_slots:,} slots with the overflow pool; at most {MAX_POOL_SLOTS:,}")
        if self.batching:
            try:
                self.step_costs  # noqa: B018 - checks step_ms against the decode rate
            except ValueError as exc:
                raise SpecError(f"{self.name}: {exc}") from None

    @property
    def batching(self) -> bool:
        """True for a continuous-batching engine (replayed step by step), False for the slot model."""
        return self.engine != "slots"

    @property
    def step_costs(self) -> StepCosts:
        """A batching engine's step costs (ms) from its prefill and decode rates and step_ms (planner.whatif.engines);
        without step_ms, the engine profile's fixed share of a lone decode step. Raises ValueError for a step_ms
        longer than a lone decode step, KeyError for the slot model."""
        lone_ms = 1000.0 / self.decode_tokens_per_s.value
        fixed = self.step_ms.value if self.step_ms is not None else profile(self.engine).fixed_share * lone_ms
        return StepCosts.from_rates(self.prefill_tokens_per_s.value, self.decode_tokens_per_s.value, fixed)

    @property
    def max_slots(self) -> int:
        """Most requests in service at once, overflow included."""
        extra = self.overflow.max_slots if self.overflow else 0
        return self.replicas * self.slots_per_replica + extra

    @property
    def usd_per_h(self) -> float:
        """The fixed hourly bill of the dedicated replicas (USD/h)."""
        return self.replicas * self.gpus_per_replica * self.usd_per_gpu_h.value


Deployment = Serverless | Dedicated


def _check_counts(name: str, **counts: int) -> None:
    for key, value in counts.items():
        if not isinstance(value, int) or value < 1:
            raise SpecError(f"{name}: {key} must be a whole number ≥ 1, got {value!r}")


def _check_rules(dep: Serverless | Dedicated, keys: dict[str, tuple[str, str | None]]) -> None:
    """Every field within its KEY_RULES range (after the checks above, which word the common mistakes), and the
    pool within MAX_POOL_SLOTS."""
    for key, (attr, unit) in keys.items():
        value = getattr(dep, attr)
        if unit in (_ENGINE, _NAME) or value is None:  # names are checked on their own; an unset step_ms is derived
            continue
        why = KEY_RULES[key].problem(value.value if isinstance(value, Figure) else value)
        if why is not None:
            raise SpecError(f"{dep.name}: {key} {why}")
    slots = dep.slots_per_replica * (dep.max_replicas if isinstance(dep, Serverless) else dep.replicas)
    if slots > MAX_POOL_SLOTS and not (isinstance(dep, Dedicated) and dep.batching):
        raise SpecError(f"{dep.name}: {slots:,} slots (slots × replicas); at most {MAX_POOL_SLOTS:,}")


def _check_routing(dep: Dedicated) -> None:
    """routing= and eviction= name a known policy and rule; a rule is refused for llama.cpp's slots and without a
    router (no per-replica cache to apply it to), and a router with an overflow pool (not replayed)."""
    for key, value in (("routing", dep.routing), ("eviction", dep.eviction)):
        if value is not None and value not in NAMED_KEYS[key]:
            raise SpecError(f"{dep.name}: {key} must be one of {', '.join(NAMED_KEYS[key])}, got {value!r}")
    if dep.eviction is not None and dep.engine == "llama.cpp":
        raise SpecError(f"{dep.name}: eviction= applies to a block cache; llama.cpp keeps one sequence per slot")
    if dep.eviction is not None and dep.routing is None:
        raise SpecError(f"{dep.name}: eviction= needs routing=, which gives each replica its own prefix cache")
    if dep.routing is not None and dep.overflow is not None:
        raise SpecError(f"{dep.name}: routing= with an overflow pool is not replayed; give one or the other")


def _check_rates(name: str, **rates: Figure) -> None:
    for key, fig in rates.items():
        if not (math.isfinite(fig.value) and fig.value > 0):
            raise SpecError(f"{name}: {key} must be a rate > 0 tokens/s, got {fig.value:g}")


def _check_non_negative(name: str, **figs: Figure) -> None:
    for key, fig in figs.items():
        if not (math.isfinite(fig.value) and fig.value >= 0):
            raise SpecError(f"{name}: {key} must be a finite number ≥ 0, got {fig.value:g}")


#: Every spec key's range (planner.inputs.validate): the same for a serverless pool, a dedicated one and an overflow
#: pool, whether the candidate comes from `--deployment`, the What-if page or code.
KEY_RULES: dict[str, Rule] = {
    "window": Rule(0, 30 * 86_400, "s"),
    "cold": Rule(0, 86_400, "s"),
    "slots": Rule(1, 4096, integer=True),
    "max": REPLICAS,
    "min": MIN_REPLICAS,
    "replicas": REPLICAS,
    "gpus": GPUS_PER_REPLICA,
    "prefill": Rule(0.01, 1e9, "tokens/s"),
    "decode": Rule(0.01, 1e9, "tokens/s"),
    "rtt": Rule(0, 60_000, "ms"),
    "overhead_tokens": Rule(0, 2_000_000, "tokens"),
    "speed_sd": Rule(0, 2, "fraction"),
    "request_sd": Rule(0, 2, "fraction"),
    "usd_per_mtok": USD_PER_MTOK,
    "usd_per_gpu_h": Rule(0, 100_000, "USD/GPU-h"),
    "max_num_batched_tokens": BATCHED_TOKENS,
    "chunked_prefill": SWITCH,
    "mixed": SWITCH,
    "block_size": KV_BLOCK_TOKENS,
    "kv_blocks": Rule(0, 100_000_000, integer=True, unit="blocks"),  # 0: the KV cache does not limit admission
    "step_ms": STEP_MS,
    "prompt_tail": Rule(0, 65_536, integer=True, unit="tokens"),  # 0: a prompt's last token ends its body's step
}
#: A batching engine's knobs (spec keys that only a batching engine takes; `slots` is its most running sequences).
BATCHING_KEYS = (
    "max_num_batched_tokens",
    "chunked_prefill",
    "mixed",
    "block_size",
    "kv_blocks",
    "step_ms",
    "prompt_tail",
)
_ENGINE = "engine"  # the "unit" of the engine key in DEDICATED_KEYS: a name, not a number
_NAME = "name"  # the "unit" of routing= and eviction=: one of NAMED_KEYS[key]
#: The keys whose value is a name from a list: the prefix replay's routing policies and the cache's eviction rules.
NAMED_KEYS: dict[str, tuple[str, ...]] = {
    "routing": tuple(r.value for r in Routing),
    "eviction": tuple(e.value for e in Eviction),
}
#: Most slots one candidate may have (replicas × slots, overflow included): the replay keeps one entry per slot.
MAX_POOL_SLOTS = 100_000

# Spec keys: name in the spec string → (field, unit or None for an integer count).
SERVERLESS_KEYS: dict[str, tuple[str, str | None]] = {
    "window": ("scale_down_window_s", "s"),
    "cold": ("cold_start_s", "s"),
    "slots": ("slots_per_replica", None),
    "max": ("max_replicas", None),
    "min": ("min_replicas", None),
    "prefill": ("prefill_tokens_per_s", "tokens/s"),
    "decode": ("decode_tokens_per_s", "tokens/s"),
    "rtt": ("rtt_ms", "ms"),
    "overhead_tokens": ("prompt_overhead_tokens", "tokens"),
    "speed_sd": ("speed_sd", "fraction"),
    "request_sd": ("request_sd", "fraction"),
    "usd_per_mtok": ("price_usd_per_mtok", "USD/Mtok"),
    "usd_per_gpu_h": ("usd_per_gpu_h", "USD/GPU-h"),
    "gpus": ("gpus_per_replica", None),
}
DEDICATED_KEYS: dict[str, tuple[str, str | None]] = {
    "replicas": ("replicas", None),
    "slots": ("slots_per_replica", None),
    "prefill": ("prefill_tokens_per_s", "tokens/s"),
    "decode": ("decode_tokens_per_s", "tokens/s"),
    "usd_per_gpu_h": ("usd_per_gpu_h", "USD/GPU-h"),
    "gpus": ("gpus_per_replica", None),
    "rtt": ("rtt_ms", "ms"),
    "overhead_tokens": ("prompt_overhead_tokens", "tokens"),
    "speed_sd": ("speed_sd", "fraction"),
    "request_sd": ("request_sd", "fraction"),
    "engine": ("engine", "engine"),
    "max_num_batched_tokens": ("max_num_batched_tokens", None),
    "chunked_prefill": ("chunked_prefill", None),
    "mixed": ("mixed", None),
    "block_size": ("block_size", None),
    "kv_blocks": ("kv_blocks", None),
    "step_ms": ("step_ms", "ms"),
    "prompt_tail": ("prompt_tail", None),
    "routing": ("routing", _NAME),
    "eviction": ("eviction", _NAME),
}
_REQUIRED = {
    "serverless": ("window", "cold", "slots", "max", "prefill", "decode"),
    "dedicated": ("replicas", "slots", "prefill", "decode", "usd_per_gpu_h"),
}
# Overflow keys are the serverless keys with this prefix; slots/prefill/decode/rtt/gpus default to the dedicated ones.
_OVERFLOW_PREFIX = "overflow_"


def _convert(spec: str, key: str, raw: str, unit: str | None) -> Figure | int | str:
    if unit == _ENGINE:
        name = raw.strip().lower()
        if name not in ENGINES:
            raise SpecError(f"deployment {spec!r}: engine must be one of {', '.join(ENGINES)}, got {raw!r}")
        return name
    if unit == _NAME:
        name = raw.strip().lower()
        if name not in NAMED_KEYS[key]:
            raise SpecError(f"deployment {spec!r}: {key} must be one of {', '.join(NAMED_KEYS[key])}, got {raw!r}")
        return name
    if unit is None:
        try:
            return int(raw)
        except ValueError:
            raise SpecError(f"deployment {spec!r}: {key} must be a whole number, got {raw!r}") from None
    try:
        value = float(raw)
    except ValueError:
        raise SpecError(f"deployment {spec!r}: {key} must be a number ({unit}), got {raw!r}") from None
    if not math.isfinite(value):
        raise SpecError(f"deployment {spec!r}: {key} must be finite, got {raw!r}")
    return Figure.typed(value, unit)


def _fields(
    spec: str, pairs: dict[str, str], keys: dict[str, tuple[str, str | None]], kind: str, defaults: Mapping[str, Figure]
) -> dict[str, Any]:  # keyword arguments for Serverless / Dedicated
    usable = {k: f for k, f in defaults.items() if k in keys and k not in pairs and keys[k][1] == f.unit}
    missing = [k for k in _REQUIRED[kind] if k not in pairs and k not in usable]
    if missing:
        raise SpecError(
            f"deployment {spec!r}: missing {', '.join(missing)} (a {kind} spec needs {', '.join(_REQUIRED[kind])})"
        )
    out: dict[str, Figure | int | str] = {keys[k][0]: f for k, f in usable.items()}
    out.update({keys[k][0]: _convert(spec, k, v, keys[k][1]) for k, v in pairs.items()})
    return out


def defaults_from_worksheet(figures: Mapping[str, Figure]) -> dict[str, Figure]:
    """Spec defaults from worksheet figures, keeping their provenance.

    network_ms → rtt (ms), prefill_tokens_per_s → prefill (tokens/s), cold_ms → cold (converted to s).
    Figures of another unit, and a zero cold start, are left out.
    """
    out: dict[str, Figure] = {}
    net = figures.get("network_ms")
    if net is not None and net.unit == "ms":
        out["rtt"] = net
    pre = figures.get("prefill_tokens_per_s")
    if pre is not None and pre.unit == "tokens/s" and pre.value > 0:
        out["prefill"] = pre
    cold = figures.get("cold_ms")
    if cold is not None and cold.unit == "ms" and cold.value > 0:
        out["cold"] = cold.replace(value=cold.value / 1000.0, unit="s")
    return out


def defaults_taken(deployments: Sequence[Deployment], defaults: Mapping[str, Figure]) -> dict[str, list[str]]:
    """Spec key → the names of the candidates that took `defaults[key]` (left the key out of their spec), for the
    keys some candidate took; a candidate kind without the key (a dedicated pool's `cold`) never takes it."""
    taken: dict[str, list[str]] = {}
    for key, fig in defaults.items():
        who = [
            d.name
            for d in deployments
            if key in (keys := SERVERLESS_KEYS if isinstance(d, Serverless) else DEDICATED_KEYS)
            and getattr(d, keys[key][0]) == fig
        ]
        if who:
            taken[key] = who
    return taken


def _engine_defaults(spec: str, pairs: dict[str, str]) -> None:
    """Fill a batching engine's knobs the spec leaves out from its profile (assets/engines.toml), `slots` included;
    refuse a batching knob on the slot model. Raises SpecError naming the spec and the key."""
    engine = pairs.get("engine", "slots").strip().lower()
    if engine not in ENGINES:
        raise SpecError(f"deployment {spec!r}: engine must be one of {', '.join(ENGINES)}, got {pairs['engine']!r}")
    if engine not in BATCHING_ENGINES:
        given = [k for k in BATCHING_KEYS if k in pairs]
        if given and engine == "slots":
            raise SpecError(
                f"deployment {spec!r}: {', '.join(given)} applies to a batching engine "
                f"(engine={'|'.join(BATCHING_ENGINES)}), not to the slot model"
            )
        return
    prof = profile(engine)
    for key in ("slots", "max_num_batched_tokens", "chunked_prefill", "mixed", "block_size", "prompt_tail"):
        pairs.setdefault(key, str(getattr(prof, key)))


def parse_deployment(
    spec: str, default_name: str | None = None, defaults: Mapping[str, Figure] | None = None
) -> Deployment:
    """Parse `serverless:window=300,cold=20,slots=8,max=4,prefill=12000,decode=60,rtt=40,usd_per_mtok=0.3`
    or `dedicated:replicas=2,slots=8,prefill=12000,decode=60,usd_per_gpu_h=3.2,gpus=1,rtt=40`.

    Units: window and cold in s, prefill/decode in tokens/s per slot, rtt in ms, prices in USD.
    Optional: `name=…`; `overhead_tokens=N` (tokens prefilled on top of each logged prompt: template,
    system prompt; `ttft-planner calibrate` measures it); `speed_sd=F`, `request_sd=F` (how much the serving
    speed varies, run to run and request to request, as fractions; calibrate measures them);
    serverless `min=`, `gpus=`, `usd_per_gpu_h=`;
    dedicated `gpus=` and an overflow pool via
    `overflow_max=N,overflow_cold=S,overflow_window=S[,overflow_usd_per_mtok=…]` (its slots, rates, RTT,
    overhead tokens and speed spreads default to the dedicated ones);
    dedicated `engine=vllm|sglang|llama.cpp` (a continuous-batching engine replayed step by step; `slots` is then its
    most running sequences) with its knobs `max_num_batched_tokens=`, `chunked_prefill=0|1`, `mixed=0|1`,
    `block_size=`, `kv_blocks=`, `step_ms=`, `prompt_tail=` (defaults from assets/engines.toml; see
    planner.whatif.engines);
    dedicated `routing=round-robin|least-loaded|session|prefix` (each replica then keeps its own prefix cache and
    queue: planner.whatif.routing) and `eviction=tail-first|radix-leaf|lru` (default: the engine's rule).
    `defaults`: figures (with provenance) for keys the spec leaves out, e.g. {"prefill": a probe's slope}
    (see defaults_from_worksheet); a value in the spec always wins.
    Raises SpecError naming the spec and the offending key.
    """
    spec = spec.strip()
    kind, sep, body = spec.partition(":")
    kind = kind.strip().lower()
    if not sep or kind not in _REQUIRED:
        raise SpecError(f"deployment {spec!r}: start with 'serverless:' or 'dedicated:' followed by key=value pairs")
    pairs: dict[str, str] = {}
    for item in filter(None, (p.strip() for p in body.split(","))):
        key, eq, value = item.partition("=")
        key = key.strip().lower()
        if not eq or not value.strip():
            raise SpecError(f"deployment {spec!r}: {item!r} is not key=value")
        if key in pairs:
            raise SpecError(f"deployment {spec!r}: {key} given twice")
        pairs[key] = value.strip()
    name = pairs.pop("name", None) or default_name or spec
    if kind == "serverless" and "engine" in pairs:
        raise SpecError(
            f"deployment {spec!r}: engine= applies to dedicated replicas: a serverless pool is replayed as slots, each "
            "replica started when a request finds no free slot, and the step model has no autoscaler; give the "
            "pool's concurrency as slots=, or put a batching engine in front of it (dedicated:engine=…,overflow_max=…)"
        )
    routed = [k for k in NAMED_KEYS if k in pairs]
    if kind == "serverless" and routed:
        raise SpecError(
            f"deployment {spec!r}: {'= and '.join(routed)}= appl{'y' if len(routed) > 1 else 'ies'} to dedicated "
            "replicas (a serverless pool packs requests onto its oldest replica with a free slot)"
        )
    if kind == "dedicated":
        _engine_defaults(spec, pairs)
    keys = SERVERLESS_KEYS if kind == "serverless" else DEDICATED_KEYS
    overflow_pairs = {k[len(_OVERFLOW_PREFIX) :]: v for k, v in pairs.items() if k.startswith(_OVERFLOW_PREFIX)}
    unknown = [k for k in pairs if k not in keys and not (kind == "dedicated" and k.startswith(_OVERFLOW_PREFIX))]
    unknown += [_OVERFLOW_PREFIX + k for k in overflow_pairs if k not in SERVERLESS_KEYS]
    if unknown:
        extra = ", overflow_<serverless key>" if kind == "dedicated" else ", name"
        raise SpecError(f"deployment {spec!r}: unknown key {', '.join(unknown)}; known: {', '.join(keys)}{extra}")
    main = {k: v for k, v in pairs.items() if not k.startswith(_OVERFLOW_PREFIX)}
    defaults = defaults or {}
    try:
        if kind == "serverless":
            return Serverless(name=name, **_fields(spec, main, SERVERLESS_KEYS, "serverless", defaults))
        dedicated = Dedicated(name=name, **_fields(spec, main, DEDICATED_KEYS, "dedicated", defaults))
        if not overflow_pairs:
            return dedicated
        if dedicated.batching and "slots" not in overflow_pairs:
            raise SpecError(
                f"deployment {spec!r}: an overflow pool behind engine={dedicated.engine} needs overflow_slots= (the "
                f"pool is replayed as slots; the engine's {dedicated.slots_per_replica} running sequences are not "
                "a serverless replica's)"
            )
        for inherited in ("slots", "gpus"):
            if inherited in main:
                overflow_pairs.setdefault(inherited, main[inherited])
        lacking = [_OVERFLOW_PREFIX + k for k in ("max", "cold", "window") if k not in overflow_pairs]
        if lacking:
            raise SpecError(f"deployment {spec!r}: an overflow pool needs {', '.join(lacking)}")
        inherited_figs = {
            k: getattr(dedicated, DEDICATED_KEYS[k][0])
            for k in ("prefill", "decode", "rtt", "overhead_tokens", "speed_sd", "request_sd")
        }
        overflow = Serverless(
            name=f"{name} overflow",
            **_fields(spec, overflow_pairs, SERVERLESS_KEYS, "serverless", {**defaults, **inherited_figs}),
        )
        return replace(dedicated, overflow=overflow)
    except SpecError as exc:
        if str(exc).startswith("deployment "):
            raise
        raise SpecError(f"deployment {spec!r}: {exc}") from None
