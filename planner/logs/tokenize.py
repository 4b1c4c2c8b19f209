"""Token counts for logs that carry prompt text but no counts.

A real tokenizer is used only when one is available offline: a Hugging Face `tokenizer.json`
the user supplies, loaded with the `tokenizers` package (fast, no network). Anything else is an
estimate of about 4 characters per token (OpenAI's rule of thumb for English text and code),
and every figure built from it is labelled an estimate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CHARS_PER_TOKEN", "TokenCounter", "message_text"]

CHARS_PER_TOKEN = 4.0


def message_text(value: Any) -> str:
    """The text of a prompt given as a string, a list of chat messages, or content blocks."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        parts = [message_text(value.get(k)) for k in ("content", "text", "input", "arguments") if k in value]
        return "\n".join(p for p in parts if p)
    if isinstance(value, (list, tuple)):
        return "\n".join(t for t in (message_text(v) for v in value) if t)
    return str(value)


@dataclass
class TokenCounter:
    """Counts tokens in text; `estimated` is True unless a real tokenizer is loaded."""

    label: str = f"estimate (≈{CHARS_PER_TOKEN:g} characters per token)"
    estimated: bool = True
    _tokenizer: Any = field(default=None, repr=False)

    @classmethod
    def from_tokenizer_json(cls, data: bytes, name: str = "tokenizer.json") -> TokenCounter:
        """A counter backed by a Hugging Face tokenizer.json.

        Raises ValueError when the file is not a tokenizer, RuntimeError when the `tokenizers`
        package is not installed (then use the estimate).
        """
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise RuntimeError(
                "exact token counts need the 'tokenizers' package: pip install 'ttft-planner[tokenizers]'; "
                "token counts will be estimated"
            ) from None
        try:
            tok = Tokenizer.from_str(data.decode("utf-8"))
        except Exception as exc:  # tokenizers raises its own Exception type
            raise ValueError(f"{name} is not a Hugging Face tokenizer.json: {str(exc)[:120]}") from None
        return cls(label=f"tokenizer {name}", estimated=False, _tokenizer=tok)

    def count(self, text: str) -> int:
        """Tokens in `text` (0 for empty text)."""
        if not text:
            return 0
        if self._tokenizer is None:
            return math.ceil(len(text) / CHARS_PER_TOKEN)
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def token_ids(self, text: str) -> list[int]:
        """The token ids of `text` from the loaded tokenizer; RuntimeError when this counter only estimates."""
        if self._tokenizer is None:
            raise RuntimeError("token ids need a tokenizer.json (this counter estimates ≈ 4 characters a token)")
        return list(self._tokenizer.encode(text, add_special_tokens=False).ids) if text else []
