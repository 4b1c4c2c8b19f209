"""planner.kvcache.slots: llama.cpp's slot rules on constructed token sequences, each answer worked out by hand.

Tokens are small ranges so the common prefixes are plain to see: SYS = 0..99 is a shared system prompt, a session's
own tokens start at 1000 × its number.
"""

from __future__ import annotations

import pytest

from planner.kvcache.slots import DEFAULT_SIMILARITY, LlamaCppSlots, common_prefix

SYS = tuple(range(100))


def user(session: int, n: int, start: int = 0) -> tuple[int, ...]:
    return tuple(range(1000 * session + start, 1000 * session + start + n))


def test_common_prefix():
    assert common_prefix((), (1, 2)) == 0
    assert common_prefix((1, 2, 3), (1, 2, 3)) == 3
    assert common_prefix((1, 2, 3), (1, 2)) == 2
    assert common_prefix((1, 2, 3, 4, 5), (1, 2, 9, 4, 5)) == 2
    assert common_prefix((7,), (8,)) == 0
    long = tuple(range(100_000))
    assert common_prefix(long, (*long[:76_543], -1, *long[76_544:])) == 76_543


def test_shared_prefix_two_sessions_on_two_slots():
    """Two sessions on 2 slots: the first lands on slot 1 (all slots unused: LRU, ties to the highest number), the
    second shares SYS with it (sim 100/150 > 0.1), so it takes slot 1 too and reuses SYS — it does not go to the
    empty slot 0. Then session 1's next turn (SYS + A + out + more) finds only SYS on slot 1 (sim 100/183 with
    session 2's tokens there): it reuses 100, not its own 150 + 2, because session 2 overwrote it."""
    slots = LlamaCppSlots(n_slots=2, slot_tokens=1000)
    a = SYS + user(1, 50)
    assert slots.serve(a, output=(7, 8, 9)) == 0
    assert (slots.slot_of_last, slots.rule_of_last) == (1, "lru")
    assert slots.tokens(1) == a + (7, 8)  # the last generated token is never decoded

    b = SYS + user(2, 50)
    assert slots.serve(b, output=(5, 6)) == 100
    assert (slots.slot_of_last, slots.rule_of_last) == (1, "similarity")
    assert slots.tokens(0) == ()
    assert slots.tokens(1) == b + (5,)

    a2 = a + (7, 8, 9) + user(1, 30, start=500)
    assert slots.serve(a2, output=(4,)) == 100
    assert slots.slot_of_last == 1


def test_sessions_keep_their_slots_when_similarity_is_off():
    """similarity 0: LRU only. Session 1 → slot 1, session 2 → slot 0 (unused, -1), session 1's next turn → the
    LRU slot, which is slot 1 again (used first), so it reuses its whole previous prompt + output − 1."""
    slots = LlamaCppSlots(n_slots=2, slot_tokens=1000, similarity=0.0)
    a = SYS + user(1, 50)
    assert slots.serve(a, output=(7, 8)) == 0
    assert slots.slot_of_last == 1
    assert slots.serve(SYS + user(2, 50), output=(5, 6)) == 0
    assert (slots.slot_of_last, slots.rule_of_last) == (0, "lru")
    assert slots.serve(a + (7, 8) + user(1, 20, start=500), output=(3,)) == 151
    assert (slots.slot_of_last, slots.rule_of_last) == (1, "lru")


def test_third_session_evicts_the_least_recently_used_slot():
    """Sessions on prompts with nothing in common (no similarity match): 1 → slot 1, 2 → slot 0, 1 again → slot 1
    by similarity (its own tokens), then 3 shares nothing and evicts the LRU slot: slot 0 (session 2, last used
    second) rather than slot 1 (session 1, used third). Session 1 then still finds its tokens; session 2 does not."""
    slots = LlamaCppSlots(n_slots=2, slot_tokens=1000)
    s1 = user(1, 80)
    s2 = user(2, 80)
    s3 = user(3, 80)
    assert slots.serve(s1, output=(1, 2)) == 0
    assert slots.slot_of_last == 1
    assert slots.serve(s2, output=(1, 2)) == 0
    assert slots.slot_of_last == 0
    s1b = s1 + (1, 2) + user(1, 20, start=500)
    assert slots.serve(s1b, output=(3, 4)) == 81  # s1 + first output token
    assert (slots.slot_of_last, slots.rule_of_last) == (1, "similarity")
    assert slots.serve(s3, output=(1, 2)) == 0
    assert (slots.slot_of_last, slots.rule_of_last) == (0, "lru")
    assert slots.serve(s1b + (3, 4), output=(5,)) == len(s1b) + 1
    assert slots.slot_of_last == 1
    assert slots.serve(s2 + (1, 2), output=(5,)) == 0  # evicted: slot 0 holds s3, the LRU slot is now 0
    assert (slots.slot_of_last, slots.rule_of_last) == (0, "lru")


def test_similarity_threshold_decides_between_matching_slot_and_empty_one():
    """Slot 1 holds SYS + A (150 tokens, used); slot 0 is empty. A prompt sharing the 100 SYS tokens out of 400:
    sim 0.25. Threshold 0.2 → slot 1 by similarity, reusing 100; threshold 0.3 → the LRU slot, the empty slot 0
    (never used: -1), reusing nothing. Exactly at the threshold (sim 0.25, threshold 0.25) is not enough: > is
    strict."""
    prompt = SYS + user(9, 300)

    def fresh(similarity: float) -> LlamaCppSlots:
        slots = LlamaCppSlots(n_slots=2, slot_tokens=1000, similarity=similarity)
        slots.serve(SYS + user(1, 50), output=(1,))
        assert slots.slot_of_last == 1
        return slots

    low = fresh(0.2)
    assert low.serve(prompt) == 100
    assert (low.slot_of_last, low.rule_of_last) == (1, "similarity")

    high = fresh(0.3)
    assert high.serve(prompt) == 0
    assert (high.slot_of_last, high.rule_of_last) == (0, "lru")

    equal = fresh(0.25)
    assert equal.serve(prompt) == 0
    assert equal.slot_of_last == 0


def test_similarity_tie_goes_to_the_lowest_slot_and_a_longer_match_wins():
    """Threshold 0.7, so the two fills (SYS shared, 100/150 = 0.67) go by LRU: slot 1, then slot 0, which is thus
    the more recently used. A prompt sharing SYS with both (100/120 = 0.83 each) takes slot 0: on a similarity tie
    the lowest-numbered slot wins, not the least recently used one (slot 1) nor the highest. A prompt that extends
    slot 1's tokens further (150/160) goes to slot 1."""
    slots = LlamaCppSlots(n_slots=2, slot_tokens=1000, similarity=0.7)
    slots.serve(SYS + user(1, 50), output=(1,))
    assert (slots.slot_of_last, slots.rule_of_last) == (1, "lru")
    slots.serve(SYS + user(2, 50), output=(1,))
    assert (slots.slot_of_last, slots.rule_of_last) == (0, "lru")
    assert slots.serve(SYS + user(3, 20)) == 100
    assert (slots.slot_of_last, slots.rule_of_last) == (0, "similarity")
    assert slots.serve(SYS + user(1, 50) + user(1, 10, start=900)) == 150
    assert (slots.slot_of_last, slots.rule_of_last) == (1, "similarity")


def test_at_least_one_prompt_token_is_evaluated():
    """The same prompt twice: the whole prompt is in the slot, yet one token is evaluated: 149 of 150 reused."""
    slots = LlamaCppSlots(n_slots=1, slot_tokens=1000)
    p = SYS + user(1, 50)
    assert slots.serve(p, output=(1, 2, 3)) == 0
    assert slots.serve(p, output=(4, 5)) == 149
    assert slots.tokens(0) == p + (4,)


def test_prompt_equal_to_the_cached_one_and_a_shorter_prompt():
    """A prompt equal to the slot's whole contents (prompt + output − 1) reuses all but one; a prompt that is a
    prefix of the slot's tokens reuses its length − 1 and cuts the slot back to it (then its own output)."""
    slots = LlamaCppSlots(n_slots=1, slot_tokens=1000)
    p = SYS + user(1, 50)
    slots.serve(p, output=(1, 2, 3))
    held = slots.tokens(0)
    assert held == p + (1, 2)
    assert slots.serve(held, output=(9,)) == len(held) - 1 == 151
    assert slots.tokens(0) == held
    assert slots.serve(SYS[:60], output=(7, 8)) == 59
    assert slots.tokens(0) == SYS[:60] + (7,)
    assert slots.serve(SYS, output=()) == 60  # only the 60 left in the slot: the cut is real
    assert slots.tokens(0) == SYS


def test_slot_contents_stop_at_the_context_size():
    slots = LlamaCppSlots(n_slots=1, slot_tokens=110)
    slots.serve(SYS, output=tuple(range(500, 520)))
    assert slots.tokens(0) == SYS + tuple(range(500, 509))  # 109 = n_ctx − 1
    with pytest.raises(ValueError, match="does not fit"):
        slots.serve(tuple(range(110)))
    with pytest.raises(ValueError, match="empty"):
        slots.serve(())


def test_arguments_are_checked():
    assert DEFAULT_SIMILARITY == 0.1
    with pytest.raises(ValueError):
        LlamaCppSlots(n_slots=0, slot_tokens=100)
    with pytest.raises(ValueError):
        LlamaCppSlots(n_slots=2, slot_tokens=1)
    for similarity in (1.5, -0.1):
        with pytest.raises(ValueError):
            LlamaCppSlots(n_slots=2, slot_tokens=100, similarity=similarity)
