"""Prefix reuse under memory pressure: which share of a team's prompts a deployment serves from its KV cache.

chains: each request's prompt as a chain of block hashes (Mooncake hash_ids, token ids, or chat text);
capacity: KV blocks per replica from the GPU fit (GiB); simulate: replicas, routing and a per-replica cache replayed
over the requests, evicting by the engine's rule (planner.logs.prefix); regime: the same swept over capacity and
routing, and the sentence a lead forwards; slots: the llama.cpp server's slot cache, the profile proven against a
real engine's counters.
"""
