"""A secret in every encoding a body, a message or a file can carry it, and a search for any of them in some text.

Written independently of planner.inputs.untrusted.mask_secret (which decodes): here each form is encoded the way a
server or a library writes it, so a test asks "does any of these strings appear?" of the store's bytes, CLI output, logs
and pages.
"""

from __future__ import annotations

import base64
import json
import re
from urllib.parse import quote, quote_plus

__all__ = ["encoded_forms", "leaks"]


def _base64_cores(plain: bytes) -> list[str]:
    """The part of base64(prefix + plain + suffix) fixed by `plain` alone, for each alignment of an unknown prefix
    (a Basic credential's user name), standard and URL-safe."""
    cores = []
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + plain).decode()
        start = 4 if shift else 0  # the first group mixes the prefix's bytes in
        whole_groups = (shift + len(plain)) // 3 * 4  # the last group may mix the suffix's bytes in
        core = encoded[start:whole_groups]
        if len(core) >= 8:
            cores += [core, core.replace("+", "-").replace("/", "_")]
    return cores


def encoded_forms(secret: str) -> list[str]:
    """`secret` as written, JSON-escaped (`\\/` as PHP writes it, and every character as `\\uXXXX`, lower and upper
    hex), percent-encoded (upper and lower hex, `+` for a space), and base64 of it alone or after any user name and
    a colon (Basic auth)."""
    json_text = json.dumps(secret)[1:-1]
    forms = {
        secret,
        json_text.replace("/", "\\/"),
        "".join(f"\\u{ord(c):04x}" for c in secret),
        "".join(f"\\u{ord(c):04X}" for c in secret),
        quote(secret, safe=""),
        re.sub("%..", lambda m: m.group().lower(), quote(secret, safe="")),
        quote_plus(secret),
        *_base64_cores(secret.encode()),
        *_base64_cores(b":" + secret.encode()),
    }
    return sorted(f for f in forms if f)


def leaks(text: str, secrets: list[str] | tuple[str, ...]) -> list[str]:
    """Each form of each secret found in `text` (empty: none of them is there)."""
    return [f for s in secrets for f in encoded_forms(s) if f in text]
