"""Serverless vs dedicated: blended price, break-even utilisation, monthly cost, hybrid per hour of day.

Definitions:

- blended serverless price P ($/1M tokens) = (uncached·P_in + cached·P_cached + output·P_out) / total tokens;
- node cost H ($/h) = GPUs per replica × $/GPU-hour (+ overhead per replica-hour);
- capacity C (tokens/h) = sustained tokens/min × 60, in the SAME token unit as the bill. When the capacity
  figure counts only computed tokens (uncached prompt + output), it is scaled up by total/(uncached+output),
  i.e. cached prompt tokens are assumed free to serve;
- break-even utilisation u* = H / (P × C / 1e6); u* ≥ 1 means serverless is cheaper at any utilisation;
- break-even volume per replica = H × 730 / P million tokens per month (730 hours a month).

Over 400 lines: the break-even model is one set of definitions (blended price, capacity, monthly cost, hybrid per hour)
whose functions use each other's units; split, the definitions would be read in two places.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import pandas as pd

from planner.capacity.errors import CapacityError
from planner.capacity.specs import TokenMix

__all__ = [
    "HOURS_PER_MONTH",
    "BreakEven",
    "CostInputs",
    "CostSummary",
    "blended_usd_per_mtok",
    "break_even",
    "break_even_tokens_per_month",
    "break_even_utilisation",
    "capacity_tokens_per_hour",
    "cost_per_mtok_at",
    "hybrid_by_hour",
    "monthly_cost_curve",
    "summarize",
]

HOURS_PER_MONTH = 730.0  # 8760 h / 12: the convention cloud price pages use


def _num(name: str, value: Any, *, positive: bool = False) -> float:
    """A finite number ≥ 0 (> 0 when positive), or CapacityError naming `name`."""
    if value is None or isinstance(value, bool):
        raise CapacityError(f"{name} must be a number, got {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise CapacityError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v):
        raise CapacityError(f"{name} must be finite, got {value!r}")
    if v < 0:
        raise CapacityError(f"{name} cannot be negative, got {v:g}")
    if positive and v == 0:
        raise CapacityError(f"{name} must be greater than 0")
    return v


def blended_usd_per_mtok(
    mix: TokenMix, input_usd_per_mtok: float, cached_input_usd_per_mtok: float, output_usd_per_mtok: float
) -> float:
    """Blended serverless price (USD per 1M tokens of any kind) for a token mix.

    Raises CapacityError for negative prices or an empty mix (no tokens at all).
    """
    p_in = _num("input price ($/1M tokens)", input_usd_per_mtok)
    p_cached = _num("cached-input price ($/1M tokens)", cached_input_usd_per_mtok)
    p_out = _num("output price ($/1M tokens)", output_usd_per_mtok)
    for name, v in (
        ("uncached prompt tokens", mix.uncached_input_tokens),
        ("cached prompt tokens", mix.cached_input_tokens),
        ("output tokens", mix.output_tokens),
    ):
        _num(f"token mix: {name}", v)
    total = mix.total_tokens
    if total <= 0:
        raise CapacityError("the token mix is empty: give some uncached, cached or output tokens")
    return (mix.uncached_input_tokens * p_in + mix.cached_input_tokens * p_cached + mix.output_tokens * p_out) / total


def capacity_tokens_per_hour(
    capacity_tokens_per_min: float, *, counts_cached: bool = True, mix: TokenMix | None = None
) -> float:
    """Sustained replica capacity in billed tokens per hour (TPM × 60).

    With counts_cached=False the TPM counts only computed tokens (uncached prompt + output) and is
    scaled to billed tokens by total/(uncached + output) of `mix`. Raises CapacityError for a capacity
    ≤ 0, or a mix without computed tokens when counts_cached is False.
    """
    tpm = _num("capacity (tokens/min per replica)", capacity_tokens_per_min, positive=True)
    per_hour = tpm * 60.0
    if counts_cached:
        return per_hour
    if mix is None:
        raise CapacityError("a capacity that excludes cached tokens needs a token mix to convert it")
    computed = mix.uncached_input_tokens + mix.output_tokens
    if computed <= 0:
        raise CapacityError(
            "the token mix has no uncached or output tokens, so a capacity in computed tokens cannot be converted"
        )
    return per_hour * mix.total_tokens / computed


def break_even_utilisation(
    node_usd_per_hour: float, blended_usd_per_mtok_: float, capacity_tokens_per_hour_: float
) -> float:
    """u* = H / (P × C/1e6): the busy fraction at which a dedicated replica costs the same as serverless.

    Returns math.inf when the serverless price is 0 (dedicated never breaks even).
    Raises CapacityError for a capacity ≤ 0 or a negative price/cost.
    """
    h = _num("dedicated cost ($/h)", node_usd_per_hour)
    p = _num("blended price ($/1M tokens)", blended_usd_per_mtok_)
    c = _num("capacity (tokens/h)", capacity_tokens_per_hour_, positive=True)
    if p == 0:
        return math.inf
    return h / (p * c / 1e6)


def break_even_tokens_per_month(node_usd_per_hour: float, blended_usd_per_mtok_: float) -> float:
    """Monthly token volume per replica at which serverless costs as much as the replica: H × 730 / P × 1e6."""
    h = _num("dedicated cost ($/h)", node_usd_per_hour)
    p = _num("blended price ($/1M tokens)", blended_usd_per_mtok_)
    return math.inf if p == 0 else h * HOURS_PER_MONTH / p * 1e6


def cost_per_mtok_at(node_usd_per_hour: float, capacity_tokens_per_hour_: float, utilisation: float) -> float:
    """Dedicated cost per 1M tokens when the replica is busy `utilisation` of the time (0..1].

    Raises CapacityError for a utilisation ≤ 0 ("no traffic: a dedicated token has no price") or > 1.
    """
    h = _num("dedicated cost ($/h)", node_usd_per_hour)
    c = _num("capacity (tokens/h)", capacity_tokens_per_hour_, positive=True)
    u = _num("utilisation", utilisation)
    if u == 0:
        raise CapacityError(
            f"no traffic: an idle replica still costs ${h:,.2f}/h, so a dedicated token has no finite price"
        )
    if u > 1:
        raise CapacityError(f"utilisation must be at most 1 (100%), got {u:g}")
    return h / (u * c / 1e6)


@dataclass(frozen=True)
class CostInputs:
    """Everything the break-even and hybrid need; a plain dict via to_dict() for st.session_state.

    Prices are USD per 1M tokens; the mix is three token volumes on any common scale;
    hourly_tokens is the traffic per hour of day (24 values, tokens/h) before growth_factor;
    a flat rate is 24 equal values.
    """

    input_usd_per_mtok: float
    cached_input_usd_per_mtok: float
    output_usd_per_mtok: float
    mix_uncached_input_tokens: float
    mix_cached_input_tokens: float
    mix_output_tokens: float
    gpu_usd_per_hour: float
    capacity_tokens_per_min: float
    gpus_per_replica: int = 1
    overhead_usd_per_replica_hour: float = 0.0
    capacity_counts_cached: bool = True
    min_replicas: int = 0
    max_replicas: int = 8
    hourly_tokens: tuple[float, ...] = field(default_factory=lambda: (0.0,) * 24)
    growth_factor: float = 1.0
    price_label: str = "typed"
    gpu_label: str = "typed"
    traffic_label: str = "typed"

    @classmethod
    def from_mix(cls, mix: TokenMix, **fields: Any) -> CostInputs:
        """CostInputs whose three mix_* volumes are `mix`'s (the inverse of .mix); `fields` are the others."""
        return cls(
            mix_uncached_input_tokens=mix.uncached_input_tokens,
            mix_cached_input_tokens=mix.cached_input_tokens,
            mix_output_tokens=mix.output_tokens,
            **fields,
        )

    @property
    def mix(self) -> TokenMix:
        return TokenMix(self.mix_uncached_input_tokens, self.mix_cached_input_tokens, self.mix_output_tokens)

    @property
    def node_usd_per_hour(self) -> float:
        """H: one replica's cost per hour (GPUs × $/GPU-h + overhead)."""
        return self.gpus_per_replica * self.gpu_usd_per_hour + self.overhead_usd_per_replica_hour

    @property
    def traffic_tokens_per_hour(self) -> list[float]:
        """The hour-of-day profile (tokens/h) scaled by the growth factor."""
        return [t * self.growth_factor for t in self.hourly_tokens]

    @property
    def monthly_tokens(self) -> float:
        """Tokens per month at the scaled profile (30.4 days of it)."""
        return sum(self.traffic_tokens_per_hour) * HOURS_PER_MONTH / 24.0

    def validate(self) -> CostInputs:
        """Raise CapacityError naming the first unusable input; return self otherwise."""
        _num("dedicated $/GPU-hour", self.gpu_usd_per_hour)
        _num("overhead $/replica-hour", self.overhead_usd_per_replica_hour)
        if int(self.gpus_per_replica) != self.gpus_per_replica or self.gpus_per_replica < 1:
            raise CapacityError(f"GPUs per replica must be a whole number ≥ 1, got {self.gpus_per_replica!r}")
        if self.min_replicas < 0 or self.max_replicas < 1 or self.min_replicas > self.max_replicas:
            raise CapacityError(
                f"replicas: need 0 ≤ minimum ≤ maximum and maximum ≥ 1, got {self.min_replicas}..{self.max_replicas}"
            )
        if len(self.hourly_tokens) != 24:
            raise CapacityError(f"the traffic profile needs 24 hourly values, got {len(self.hourly_tokens)}")
        for i, t in enumerate(self.hourly_tokens):
            _num(f"traffic at hour {i} (tokens/h)", t)
        _num("growth factor", self.growth_factor)
        capacity_tokens_per_hour(self.capacity_tokens_per_min, counts_cached=self.capacity_counts_cached, mix=self.mix)
        blended_usd_per_mtok(
            self.mix, self.input_usd_per_mtok, self.cached_input_usd_per_mtok, self.output_usd_per_mtok
        )
        return self

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["hourly_tokens"] = list(self.hourly_tokens)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CostInputs:
        """Inverse of to_dict; raises CapacityError on a malformed record."""
        try:
            kw = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
            if "hourly_tokens" in kw:
                kw["hourly_tokens"] = tuple(float(t) for t in kw["hourly_tokens"])
            return cls(**kw)
        except (TypeError, ValueError) as exc:
            raise CapacityError(f"cost inputs record is malformed: {exc}") from None

    def replace(self, **changes: Any) -> CostInputs:
        return replace(self, **changes)


@dataclass(frozen=True)
class BreakEven:
    """Break-even of one dedicated replica against a serverless price."""

    node_usd_per_hour: float
    gpus_per_replica: int
    capacity_tokens_per_hour: float
    capacity_counts_cached: bool
    blended_usd_per_mtok: float
    break_even_utilisation: float  # math.inf when the serverless price is 0
    break_even_tokens_per_month: float
    dedicated_usd_per_mtok_at_full_load: float

    @property
    def serverless_always_cheaper(self) -> bool:
        return self.break_even_utilisation >= 1.0 - 1e-12

    def verdict(self) -> str:
        """One sentence a reader can act on, with node size and token definition."""
        u = self.break_even_utilisation
        n = self.gpus_per_replica
        article = "an" if str(n).startswith("8") or n in (11, 18) else "a"  # "an 8-GPU", "a 1-GPU"
        node = f"{n}-GPU replica at ${self.node_usd_per_hour:,.2f}/h"
        if math.isinf(u):
            return f"Serverless costs nothing at this price, so {article} {node} never breaks even."
        if math.isclose(u, 1.0, rel_tol=1e-9, abs_tol=1e-12):
            return (
                f"Break-even only at 100% utilisation: {article} {node} "
                f"matches serverless (${self.blended_usd_per_mtok:.3f}/1M) "
                "only if it is never idle, so in practice serverless is cheaper."
            )
        if u > 1:
            return (
                f"Serverless is cheaper at any utilisation: even 100% busy, {article} {node} costs "
                f"${self.dedicated_usd_per_mtok_at_full_load:.3f}/1M tokens vs ${self.blended_usd_per_mtok:.3f}"
                f"/1M serverless (u* = {u:.2f})."
            )
        return (
            f"Dedicated is cheaper above {u:.0%} utilisation of {article} {node} "
            f"(≥ {self.break_even_tokens_per_month / 1e9:,.2f}B tokens/month "
            f"per replica at ${self.blended_usd_per_mtok:.3f}/1M)."
        )

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["serverless_always_cheaper"] = self.serverless_always_cheaper
        d["verdict"] = self.verdict()
        return d


def break_even(inputs: CostInputs) -> BreakEven:
    """Break-even of one replica of `inputs`. Raises CapacityError naming the bad input."""
    inputs.validate()
    p = blended_usd_per_mtok(
        inputs.mix, inputs.input_usd_per_mtok, inputs.cached_input_usd_per_mtok, inputs.output_usd_per_mtok
    )
    c = capacity_tokens_per_hour(
        inputs.capacity_tokens_per_min, counts_cached=inputs.capacity_counts_cached, mix=inputs.mix
    )
    h = inputs.node_usd_per_hour
    return BreakEven(
        node_usd_per_hour=h,
        gpus_per_replica=int(inputs.gpus_per_replica),
        capacity_tokens_per_hour=c,
        capacity_counts_cached=inputs.capacity_counts_cached,
        blended_usd_per_mtok=p,
        break_even_utilisation=break_even_utilisation(h, p, c),
        break_even_tokens_per_month=break_even_tokens_per_month(h, p),
        dedicated_usd_per_mtok_at_full_load=h / (c / 1e6),
    )


def monthly_cost_curve(inputs: CostInputs, points: int = 101) -> pd.DataFrame:
    """Monthly cost of ONE replica vs serverless for the same tokens, over utilisation 0..1.

    Columns: utilisation, tokens_per_month, serverless_usd_per_month, dedicated_usd_per_month.
    """
    be = break_even(inputs)
    us = [i / (points - 1) for i in range(points)]
    tokens = [u * be.capacity_tokens_per_hour * HOURS_PER_MONTH for u in us]
    return pd.DataFrame(
        {
            "utilisation": us,
            "tokens_per_month": tokens,
            "serverless_usd_per_month": [t / 1e6 * be.blended_usd_per_mtok for t in tokens],
            "dedicated_usd_per_month": [be.node_usd_per_hour * HOURS_PER_MONTH] * points,
        }
    )


def hybrid_by_hour(inputs: CostInputs, base_replicas: int) -> pd.DataFrame:
    """A dedicated base of `base_replicas` replicas plus serverless overflow, hour by hour.

    Columns: hour, tokens_per_hour, dedicated_tokens, overflow_tokens, dedicated_usd, serverless_usd, total_usd
    (USD per that hour of one day).
    """
    be = break_even(inputs)
    if base_replicas < 0:
        raise CapacityError(f"base replicas cannot be negative, got {base_replicas}")
    cap = base_replicas * be.capacity_tokens_per_hour
    rows = []
    for hour, t in enumerate(inputs.traffic_tokens_per_hour):
        served = min(t, cap)
        overflow = t - served
        ded = base_replicas * be.node_usd_per_hour
        srv = overflow / 1e6 * be.blended_usd_per_mtok
        rows.append((hour, t, served, overflow, ded, srv, ded + srv))
    return pd.DataFrame(
        rows,
        columns=[
            "hour",
            "tokens_per_hour",
            "dedicated_tokens",
            "overflow_tokens",
            "dedicated_usd",
            "serverless_usd",
            "total_usd",
        ],
    )


@dataclass(frozen=True)
class CostSummary:
    """Where the team's traffic sits and what each option costs per month."""

    break_even: BreakEven
    monthly_tokens: float
    peak_tokens_per_hour: float
    replicas_for_peak: int  # replicas to serve the peak hour dedicated-only (≥ min_replicas)
    replicas_capped: bool  # the peak needs more than max_replicas
    traffic_utilisation: float  # mean traffic / (replicas_for_peak × capacity); 0 with no traffic
    serverless_usd_per_month: float
    dedicated_usd_per_month: float  # replicas_for_peak (capped at max) kept up all month
    dedicated_usd_per_mtok: float | None  # None with no traffic
    hybrid_base_replicas: int
    hybrid_usd_per_month: float
    notes: tuple[str, ...]

    @property
    def cheapest(self) -> str:
        """The cheapest option; on a tie within a cent the simpler one (serverless, then dedicated). A hybrid with
        no dedicated replica is serverless itself, so it is never the answer."""
        options = {"serverless": self.serverless_usd_per_month, "dedicated": self.dedicated_usd_per_month}
        if self.hybrid_base_replicas > 0:
            options["hybrid"] = self.hybrid_usd_per_month
        best = min(options.values())
        return next(k for k, usd in options.items() if usd <= best + 0.01)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["break_even"] = self.break_even.to_dict()
        d["notes"] = list(self.notes)
        d["cheapest"] = self.cheapest
        return d


def summarize(inputs: CostInputs) -> CostSummary:
    """Monthly cost of serverless, dedicated and the cheapest hybrid for the traffic in `inputs`.

    The hybrid tries every base from min_replicas to max_replicas. Raises CapacityError on bad input.
    """
    be = break_even(inputs)
    traffic = inputs.traffic_tokens_per_hour
    monthly = inputs.monthly_tokens
    peak = max(traffic)
    notes: list[str] = []
    need = (
        max(inputs.min_replicas, math.ceil(peak / be.capacity_tokens_per_hour - 1e-12))
        if peak > 0
        else inputs.min_replicas
    )
    capped = need > inputs.max_replicas
    replicas = min(need, inputs.max_replicas)
    if capped:
        notes.append(
            f"The peak hour needs {need} replicas but the maximum is {inputs.max_replicas}"
            f": dedicated-only would queue or drop the excess."
        )
    mean = sum(traffic) / 24.0
    util = mean / (replicas * be.capacity_tokens_per_hour) if replicas and mean > 0 else 0.0
    serverless = monthly / 1e6 * be.blended_usd_per_mtok
    dedicated = replicas * be.node_usd_per_hour * HOURS_PER_MONTH
    if monthly <= 0:
        notes.append("No traffic: serverless costs nothing and any warm replica is pure idle cost.")
        per_mtok = None
    else:
        served = min(monthly, replicas * be.capacity_tokens_per_hour * HOURS_PER_MONTH)
        per_mtok = dedicated / (served / 1e6) if served > 0 else None
    best_n, best_usd = inputs.min_replicas, math.inf
    for n in range(inputs.min_replicas, inputs.max_replicas + 1):
        usd = float(hybrid_by_hour(inputs, n)["total_usd"].sum()) * HOURS_PER_MONTH / 24.0
        if usd < best_usd - 1e-9:
            best_n, best_usd = n, usd
    return CostSummary(
        be, monthly, peak, replicas, capped, util, serverless, dedicated, per_mtok, best_n, best_usd, tuple(notes)
    )
