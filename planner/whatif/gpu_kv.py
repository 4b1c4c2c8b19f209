"""A batching candidate's KV cache from the GPU it runs on: `whatif --kv-from-gpu MODEL@GPU[:N]` fills `kv_blocks`.

The step model admits a request only when its replica's KV cache has blocks for its prompt and output
(planner.whatif.steps), so KV pressure — requests waiting for blocks — is modelled only when `kv_blocks` is known.
Described by its GPU, a deployment's KV capacity is planner.kvcache.capacity's: (memory in GiB × usable fraction ×
GPUs − weights − reserve) ÷ KV bytes per token, in tokens; a candidate's blocks are those tokens ÷ its block_size.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from planner.kvcache.capacity import KvCapacity
from planner.whatif.deployment import Dedicated, Deployment

__all__ = ["with_kv_blocks"]


def with_kv_blocks(deployments: Sequence[Deployment], kv: KvCapacity) -> tuple[list[Deployment], dict[str, int]]:
    """`deployments` with every batching candidate that leaves kv_blocks out (0) given the blocks one replica holds on
    `kv`'s GPUs (kv.tokens ÷ its block_size, whole blocks), and {candidate name: blocks given}. A spec's own
    kv_blocks, and the slot model (no KV blocks), are kept as they are."""
    out: list[Deployment] = []
    given: dict[str, int] = {}
    for d in deployments:
        if isinstance(d, Dedicated) and d.batching and d.kv_blocks == 0:
            blocks = kv.tokens // d.block_size
            d = replace(d, kv_blocks=blocks)
            given[d.name] = blocks
        out.append(d)
    return out, given
