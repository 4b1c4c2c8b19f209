"""Each request's prefix identity carried with a what-if trace: its prompt's block hashes and its session.

Attached by planner.whatif.routing.attach_prefix (from the same file, read by planner.kvcache.chains) so that a
deployment with `routing=` can give each replica its own prefix cache; it follows the trace through growth and the
busiest-day cut (`take`). No prompt text: hashes only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["PrefixIdentity"]


@dataclass(frozen=True)
class PrefixIdentity:
    """Per request (trace order): the chained hashes of its prompt's full blocks and its session (None without);
    block_tokens: tokens a block holds; capacity_blocks: the prefix cache of one replica, in those blocks; source:
    how the identity was made (planner.kvcache.chains.PrefixTrace.source)."""

    blocks: tuple[tuple[int, ...], ...]
    sessions: tuple[str | None, ...]
    block_tokens: int
    capacity_blocks: int
    source: str = ""

    def take(self, index: np.ndarray | Sequence[int]) -> PrefixIdentity:
        """The identity of a sub-trace: `index` as Trace.take takes it (a boolean mask or indices, in order)."""
        idx = np.asarray(index)
        if idx.dtype == bool:
            idx = np.flatnonzero(idx)
        return PrefixIdentity(
            tuple(self.blocks[i] for i in idx.tolist()),
            tuple(self.sessions[i] for i in idx.tolist()),
            self.block_tokens,
            self.capacity_blocks,
            self.source,
        )
