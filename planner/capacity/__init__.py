"""Capacity and cost: break-even, weight-load projection, GPU fit, prefill rate, warm-pool sizing.

One idea per module: `cost` (serverless vs dedicated), `weights` (checkpoint bytes and load time),
`gpufit` (weights + KV cache vs HBM), `prefill` (FLOPs model and measured slope), `warmpool`
(Erlang C and the keep-warm trade-off); `specs` types assets/{gpus,models,prices,loaders}.toml.
Every function raises `CapacityError` (a ValueError) with a message naming the bad input.
"""

from planner.capacity.cost import CostInputs, CostSummary, break_even, summarize
from planner.capacity.errors import CapacityError

__all__ = ["CapacityError", "CostInputs", "CostSummary", "break_even", "summarize"]
