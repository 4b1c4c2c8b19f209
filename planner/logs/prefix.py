"""Prefix-cache hits derived from block hashes (Mooncake / AIPerf traces' `hash_ids`), under an LRU cache.

Each request lists the hashes of its prompt's fixed-size blocks (512 tokens in the Mooncake traces);
a hash stands for the whole prefix up to that block, so a request reuses its leading blocks that are
still in the cache. The cache holds `capacity_blocks` blocks and evicts the least recently used.
The result is derived, not logged: callers label it so.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

__all__ = ["DEFAULT_BLOCK_TOKENS", "DEFAULT_CACHE_BLOCKS", "PrefixCache"]

DEFAULT_BLOCK_TOKENS = 512  # Mooncake's block size (AIPerf's default too)
DEFAULT_CACHE_BLOCKS = 16_384  # ≈ 8.4 M tokens of KV cache at 512 tokens a block


class PrefixCache:
    """An LRU set of block hashes; `hit_blocks` counts a request's leading blocks already cached, then caches all
    of them."""

    def __init__(self, capacity_blocks: int = DEFAULT_CACHE_BLOCKS, block_tokens: int = DEFAULT_BLOCK_TOKENS) -> None:
        if capacity_blocks < 1 or block_tokens < 1:
            raise ValueError("the prefix cache needs at least one block of at least one token")
        self.capacity_blocks = int(capacity_blocks)
        self.block_tokens = int(block_tokens)
        self._lru: OrderedDict[object, None] = OrderedDict()

    def matched_blocks(self, hashes: Sequence[object]) -> int:
        """A request's leading blocks already cached, the cache left as it is (a router's look)."""
        hits = 0
        for h in hashes:
            if h not in self._lru:
                break
            hits += 1
        return hits

    def hit_blocks(self, hashes: Sequence[object]) -> int:
        """A request's leading blocks already cached; then every block of it is cached, the oldest evicted."""
        lru = self._lru
        hits = self.matched_blocks(hashes)
        for h in hashes:
            if h in lru:
                lru.move_to_end(h)
            else:
                lru[h] = None
        while len(lru) > self.capacity_blocks:
            lru.popitem(last=False)
        return hits

    def cached_tokens(self, hashes: Sequence[object], prompt_tokens: int) -> int:
        """Tokens of this prompt served from the cache (never more than the prompt)."""
        return min(self.hit_blocks(hashes) * self.block_tokens, int(prompt_tokens))

    def label(self) -> str:
        return (
            f"cached tokens derived from hash_ids: leading blocks already seen, under an LRU cache of "
            f"{self.capacity_blocks:,} blocks × {self.block_tokens} tokens"
        )
