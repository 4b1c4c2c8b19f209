"""The prefix cache of block hashes, evicting as a named engine does: the one cache model of the planner.

Each request lists the hashes of its prompt's fixed-size blocks (512 tokens in the Mooncake traces; 16 for vLLM's
own blocks); a hash stands for the whole prefix up to that block, so a request reuses its leading blocks still in
the cache. The cache holds `capacity_blocks` blocks; when a request's new blocks do not fit, blocks go by the
eviction rule (`Eviction`), a stated engine rule:

- `tail-first` (vLLM, `ENGINE_EVICTION["vllm"]`): vLLM v1's KVCacheManager frees a finished request's blocks in
  reverse order into its FreeKVCacheBlockQueue, and a new block is taken from that queue's head. So the least
  recently freed block goes first and, of one request, its last block before its first: a shared prefix outlives
  the tails that hang off it.
- `radix-leaf` (SGLang, `ENGINE_EVICTION["sglang"]`): SGLang's RadixCache evicts only leaves, least recently used
  first, and a leaf is a whole node of its compressed radix tree: every block from the last point where prompts
  branched (or a request's match ended) to the end. Evicting one frees that whole run at once, and its parent
  becomes a leaf when it has no other child.
- `lru`: every block by its own last use, a prompt's first block before its last (no engine does this; it is the
  model this project had before issue 45, kept to compare).

Requests are served one at a time in arrival order (a replay, not a scheduler): a request's matched blocks are held
while its new ones are placed, so it never evicts its own prefix. A request longer than the whole cache keeps its
leading blocks. Used by the log reader (cached tokens derived from `hash_ids`) and, per replica, by the prefix
replay (planner.kvcache.simulate). The result is derived, not logged: callers label it so.
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from enum import StrEnum

__all__ = [
    "DEFAULT_BLOCK_TOKENS",
    "DEFAULT_CACHE_BLOCKS",
    "DEFAULT_EVICTION",
    "ENGINE_EVICTION",
    "Eviction",
    "PrefixCache",
    "eviction_for",
]

DEFAULT_BLOCK_TOKENS = 512  # Mooncake's block size (AIPerf's default too)
DEFAULT_CACHE_BLOCKS = 16_384  # ≈ 8.4 M tokens of KV cache at 512 tokens a block


class Eviction(StrEnum):
    """Which cached blocks a full cache gives up first (see the module docstring)."""

    LRU = "lru"
    TAIL_FIRST = "tail-first"
    RADIX_LEAF = "radix-leaf"


#: Each engine's eviction rule: vLLM's block pool frees a request's blocks tail first, SGLang's radix cache evicts
#: leaves. llama.cpp keeps whole sequences in slots instead (planner.kvcache.slots), so it has no entry here.
ENGINE_EVICTION: dict[str, Eviction] = {"vllm": Eviction.TAIL_FIRST, "sglang": Eviction.RADIX_LEAF}
#: The rule when the engine is not known (a log's derived hits): vLLM's.
DEFAULT_EVICTION = Eviction.TAIL_FIRST


def eviction_for(engine: str) -> Eviction:
    """The eviction rule of `engine` ("vllm", "sglang"); raises ValueError naming the engines that have one."""
    try:
        return ENGINE_EVICTION[engine.strip().lower()]
    except KeyError:
        raise ValueError(
            f"engine {engine!r} has no block-cache eviction rule; one of {', '.join(ENGINE_EVICTION)}"
        ) from None


class _Ordered:
    """`lru` and `tail-first`: one recency order over blocks (an OrderedDict, oldest first); they differ only in the
    order a request's blocks are put back (first to last, or last to first)."""

    def __init__(self, capacity: int, reverse: bool) -> None:
        self.capacity = capacity
        self.reverse = reverse
        self.order: OrderedDict[Hashable, None] = OrderedDict()

    def __contains__(self, h: Hashable) -> bool:
        return h in self.order

    def __len__(self) -> int:
        return len(self.order)

    def serve(self, hashes: Sequence[Hashable], hits: int) -> None:
        order = self.order
        for h in reversed(hashes) if self.reverse else hashes:
            if h in order:
                order.move_to_end(h)
            else:
                order[h] = None
        while len(order) > self.capacity:
            order.popitem(last=False)


class _Node:
    __slots__ = ("cut", "last", "n_children", "parent")

    def __init__(self, parent: Hashable | None, last: int) -> None:
        self.parent = parent
        self.n_children = 0
        self.last = last  # last access, on the radix node this block belongs to
        self.cut = False  # a radix node ends at this block (the tree branches, or a request ended or matched here)


class _Radix:
    """`radix-leaf`: SGLang's compressed radix tree over block hashes. A node is a run of blocks between cuts;
    eviction pops the least recently used leaf node whole."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.nodes: dict[Hashable, _Node] = {}
        self._heap: list[tuple[int, int, Hashable]] = []  # (last access, tiebreak, a leaf's last block); lazy
        self._clock = 0
        self._seq = 0

    def __contains__(self, h: Hashable) -> bool:
        return h in self.nodes

    def __len__(self) -> int:
        return len(self.nodes)

    def _tick(self) -> int:
        self._clock += 1
        return self._clock

    def _push(self, h: Hashable) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (self.nodes[h].last, self._seq, h))

    def _evict_leaf(self, locked: set[Hashable], held: list[tuple[int, int, Hashable]]) -> int:
        """Evict the least recently used leaf node not in `locked` whole; the blocks freed (0 when none is left).
        A locked leaf's heap entry goes to `held`, to be pushed back once the request is placed."""
        nodes = self.nodes
        while self._heap:
            entry = heapq.heappop(self._heap)
            last, _, h = entry
            node = nodes.get(h)
            if node is None or node.n_children or node.last != last:
                continue  # stale: gone, grown a child, or touched since (a newer entry stands for it)
            if h in locked:
                held.append(entry)  # the request being served holds it (SGLang's lock_ref)
                continue
            freed = 0
            while True:  # up the run to the node's first block: its parent ends the node above (a cut)
                del nodes[h]
                freed += 1
                parent = node.parent
                if parent is None:
                    break
                up = nodes[parent]
                up.n_children -= 1
                if up.cut or up.n_children:
                    if not up.n_children:
                        self._push(parent)
                    break
                h, node = parent, up
            return freed
        return 0

    def serve(self, hashes: Sequence[Hashable], hits: int) -> None:
        nodes = self.nodes
        t = self._tick()
        for h in hashes[:hits]:  # the match touches every node on its path
            nodes[h].last = t
        locked = set(hashes[:hits])
        if hits:
            end = nodes[hashes[hits - 1]]
            end.cut = True  # SGLang splits the node where a match ends
            if not end.n_children:
                self._push(hashes[hits - 1])
        new = list(hashes[hits:])
        free = self.capacity - len(nodes)
        held: list[tuple[int, int, Hashable]] = []
        while len(new) > free:
            freed = self._evict_leaf(locked, held)
            if not freed:
                break
            free += freed
        for entry in held:
            heapq.heappush(self._heap, entry)
        new = new[: max(free, 0)]  # past the whole cache: the request keeps its leading blocks
        parent = hashes[hits - 1] if hits else None
        for h in new:
            if h in nodes:  # a hash repeated within one prompt: keep its first place in the tree
                break
            nodes[h] = _Node(parent, t)
            if parent is not None:
                up = nodes[parent]
                up.n_children += 1
                if up.n_children > 1:
                    up.cut = True
            parent = h
        if parent is not None and parent in nodes and not nodes[parent].n_children:
            nodes[parent].cut = True
            nodes[parent].last = t
            self._push(parent)
        if len(self._heap) > 4 * len(nodes) + 1024:  # drop stale entries now and then
            self._heap = [(n.last, 0, h) for h, n in nodes.items() if not n.n_children]
            heapq.heapify(self._heap)


class PrefixCache:
    """A prefix cache of block hashes under an eviction rule; `hit_blocks` counts a request's leading blocks already
    cached, then caches all of them. Raises ValueError for fewer than one block or token, or an unknown rule."""

    def __init__(
        self,
        capacity_blocks: int = DEFAULT_CACHE_BLOCKS,
        block_tokens: int = DEFAULT_BLOCK_TOKENS,
        eviction: Eviction | str = DEFAULT_EVICTION,
    ) -> None:
        if capacity_blocks < 1 or block_tokens < 1:
            raise ValueError("the prefix cache needs at least one block of at least one token")
        try:
            self.eviction = Eviction(eviction)
        except ValueError:
            raise ValueError(f"eviction {eviction!r}: one of {', '.join(e.value for e in Eviction)}") from None
        self.capacity_blocks = int(capacity_blocks)
        self.block_tokens = int(block_tokens)
        self._held: _Ordered | _Radix
        if self.eviction is Eviction.RADIX_LEAF:
            self._held = _Radix(self.capacity_blocks)
        else:
            self._held = _Ordered(self.capacity_blocks, reverse=self.eviction is Eviction.TAIL_FIRST)

    def __len__(self) -> int:
        """Blocks cached now."""
        return len(self._held)

    def matched_blocks(self, hashes: Sequence[Hashable]) -> int:
        """A request's leading blocks already cached, the cache left as it is (a router's look)."""
        hits = 0
        for h in hashes:
            if h not in self._held:
                break
            hits += 1
        return hits

    def hit_blocks(self, hashes: Sequence[Hashable]) -> int:
        """A request's leading blocks already cached; then every block of it is cached, others evicted by the rule."""
        hits = self.matched_blocks(hashes)
        self._held.serve(hashes, hits)
        return hits

    def cached_tokens(self, hashes: Sequence[Hashable], prompt_tokens: int) -> int:
        """Tokens of this prompt served from the cache (never more than the prompt)."""
        return min(self.hit_blocks(hashes) * self.block_tokens, int(prompt_tokens))

    def label(self) -> str:
        return (
            f"cached tokens derived from hash_ids: leading blocks already seen, under a {self.eviction.value} "
            f"prefix cache of {self.capacity_blocks:,} blocks × {self.block_tokens} tokens"
        )
