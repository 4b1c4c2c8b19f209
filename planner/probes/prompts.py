"""Probe prompts of about N tokens, with a cache-busting nonce at the very start.

How tokens are counted: the body is made of short, common, lower-case English
words, each preceded by a space. Every one of them is a single token in the
GPT-4o (o200k), GPT-4 (cl100k), Llama 3 and Gemma tokenizers, so N words ≈ N
tokens. `count_tokens` is that rule (whitespace-separated words), and
`count_tokens(build_prompt(N, nonce)) == N` for N ≥ 8; it is what the simulator
charges for. Real tokenizers see a few more: the colon after the nonce and
the chat template's own tokens (~20 for Gemma's); `usage.prompt_tokens` in each
sample shows the server's own count, and the prefill fit uses it when the
server reports it. The nonce is four random words of the same vocabulary, one
token each (a hex or decimal nonce splits into a token per digit or two).

The nonce goes FIRST: a prefix cache matches from the first token, so a nonce
anywhere else would let the server reuse everything before it.
"""

from __future__ import annotations

import secrets

__all__ = ["NONCE_TOKENS", "build_prompt", "count_tokens", "new_nonce"]

_WORDS = (
    "the time people way year day thing man world life hand part child eye woman place work week case point "
    "number group problem fact water room mother area money story month lot right study book job word business "
    "issue side kind head house service friend father power hour game line end member law car city name team "
    "minute idea kid body back parent face others level office door health person art war history party result "
    "change morning reason research girl guy moment air teacher force education"
).split()

#: Extra tokens a real tokenizer sees for the nonce over the word count (the colon after it).
NONCE_TOKENS = 1
NONCE_WORDS = 4


def new_nonce() -> str:
    """Four random one-token words, e.g. "lot kid air area": ~27 bits, four tokens."""
    return " ".join(secrets.choice(_WORDS) for _ in range(NONCE_WORDS))


def count_tokens(text: str) -> int:
    """Approximate token count: whitespace-separated words (the rule `build_prompt` is sized by)."""
    return len(text.split())


def build_prompt(tokens: int, nonce: str | None) -> str:
    """A prompt of about `tokens` tokens.

    With a nonce (the default for probes) it starts `probe <nonce>:` so that no
    two prompts share a prefix; with nonce=None the text is identical on every
    call (a deliberately cached series). Raises ValueError when tokens < 1.
    """
    if tokens < 1:
        raise ValueError(f"a probe prompt needs at least 1 token, got {tokens}")
    head = f"probe {nonce}:" if nonce else "probe:"
    tail = "reply with one long paragraph."
    body_n = max(1, tokens - count_tokens(head) - count_tokens(tail))
    body = " ".join(_WORDS[i % len(_WORDS)] for i in range(body_n))
    return f"{head} {body} {tail}"
