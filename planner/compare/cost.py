"""Cost at the team's traffic, per endpoint: which traffic and which price, and where each came from.

Traffic and the token mix come from the Capacity & cost page's inputs
(planner.capacity.cost.CostInputs) when the user filled them in; otherwise
from typed defaults (the default token mix in assets/prices.toml and a flat
DEFAULT_TOKENS_PER_MONTH). An endpoint's price is, in order: a price typed
for that endpoint; the serverless price preset whose provider and model match
the endpoint's; the Capacity page's serverless price; otherwise unpriced.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from planner.capacity.cost import CostInputs, blended_usd_per_mtok
from planner.capacity.errors import CapacityError
from planner.capacity.specs import TokenMix, default_mix, serverless_prices
from planner.compare.data import EndpointInfo
from planner.compare.figures import CostBasis

__all__ = ["DEFAULT_TOKENS_PER_MONTH", "cost_basis"]

DEFAULT_TOKENS_PER_MONTH = 1e9  # a typed default: one billion tokens a month (input + output)


def _preset_price(e: EndpointInfo, mix: TokenMix) -> float | None:
    for row in serverless_prices():
        if row.provider.lower() == e.provider.lower() and row.model.lower() == e.model.lower():
            return blended_usd_per_mtok(
                mix, row.input_usd_per_mtok, row.effective_cached_usd_per_mtok, row.output_usd_per_mtok
            )
    return None


def cost_basis(
    endpoints: Sequence[EndpointInfo],
    cost_inputs: Mapping[str, Any] | None = None,
    price_usd_per_mtok: Mapping[str, float] | None = None,
    *,
    tokens_per_month: float | None = None,
) -> CostBasis:
    """The traffic and per-endpoint blended prices for the comparison (see module doc for the order).

    cost_inputs: CostInputs.to_dict() from the Capacity page, or None; price_usd_per_mtok:
    typed prices by endpoint name; tokens_per_month overrides the traffic. Raises
    planner.capacity.errors.CapacityError for malformed cost inputs or negative prices.
    """
    typed = dict(price_usd_per_mtok or {})
    for name, typed_price in typed.items():
        if typed_price < 0:
            raise CapacityError(f"price for {name} cannot be negative, got {typed_price:g} USD per 1M tokens")
    inputs = CostInputs.from_dict(dict(cost_inputs)) if cost_inputs else None
    mix = inputs.mix if inputs is not None else default_mix()
    page_price = None
    if inputs is not None:
        page_price = blended_usd_per_mtok(
            mix, inputs.input_usd_per_mtok, inputs.cached_input_usd_per_mtok, inputs.output_usd_per_mtok
        )
    prices: dict[str, float] = {}
    for e in endpoints:
        price = typed.get(e.name)
        if price is None:
            price = _preset_price(e, mix)
        if price is None:
            price = page_price
        if price is not None:
            prices[e.name] = float(price)
    if tokens_per_month is not None:
        tokens, traffic = float(tokens_per_month), "typed traffic"
    elif inputs is not None and inputs.monthly_tokens > 0:
        tokens, traffic = inputs.monthly_tokens, f"Capacity page traffic ({inputs.traffic_label})"
    else:
        tokens, traffic = DEFAULT_TOKENS_PER_MONTH, "typed default traffic"
    mix_src = f"Capacity page mix ({inputs.mix.label})" if inputs is not None else f"default mix ({mix.label})"
    return CostBasis(
        tokens,
        prices,
        f"{traffic}; {mix_src}; prices typed per endpoint, else matching presets, "
        "else the Capacity page's serverless price",
    )
