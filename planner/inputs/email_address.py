"""What counts as one e-mail address: the sign-in's roles (an OIDC `email` claim matched against the roles file) and
the alert rules' recipients read it the same way.

One address is `local@domain` with exactly one `@`: `admin@example.com@evil.com` is not an address (the text before its
last `@` is not anyone's mailbox at example.com), so it can match no e-mail or domain rule and is never mailed. The
local part holds letters, digits and RFC 5322's other atom characters (`.!#$%&'*+/=?^_`{|}~-`); the domain is host-name
labels (letters of any script, digits, `-`) joined by dots. Quoted local parts, comments and `Name <addr>` forms are
refused: nobody needs them here, and each is a way to smuggle a second address or a header line in.
"""

from __future__ import annotations

import re

__all__ = ["MAX_ADDRESS_CHARS", "is_address", "parse_address_list"]

#: RFC 5321's longest path (254 characters of address).
MAX_ADDRESS_CHARS = 254

_ADDRESS = re.compile(r"[\w.!#$%&'*+/=?^`{|}~-]+@[^\W_](?:[\w-]*[^\W_])?(?:\.[^\W_](?:[\w-]*[^\W_])?)*")


def is_address(text: str) -> bool:
    """Whether `text` is exactly one e-mail address (as written: no surrounding spaces, at most
    MAX_ADDRESS_CHARS characters)."""
    return isinstance(text, str) and len(text) <= MAX_ADDRESS_CHARS and _ADDRESS.fullmatch(text) is not None


def parse_address_list(text: str, *, what: str = "e-mail") -> list[str]:
    """The addresses of a comma-separated list (spaces around each allowed, empty items skipped); raises ValueError
    naming `what` and the first item that is not one address (shown escaped: a line break reads as `\\n`)."""
    out = []
    for item in text.split(","):
        item = item.strip(" ")
        if not item:
            continue
        if not is_address(item):
            shown = item if len(item) <= 80 else item[:79] + "…"
            raise ValueError(
                f"{what}: {shown!r} is not an e-mail address (give name@example.com, several separated by commas)"
            )
        out.append(item)
    return out
