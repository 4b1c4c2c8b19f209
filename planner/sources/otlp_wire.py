"""How many messages a protobuf body holds, counted on the wire by the message's schema, without building them.

Parsing a protobuf body builds every message it holds (an empty span is two bytes on the wire and some 170 bytes
parsed, and more again as OTLP JSON's dicts), so a 16 MB body of empty spans would cost gigabytes. The receiver
counts first: `messages(body, descriptor, limit)` walks the wire format (tags, varints, lengths) and follows each
length-delimited field that the descriptor says is a message, in memory that does not grow with the body. A body
that is not valid protobuf stops the count early: the parser that runs next names what is wrong with it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["messages"]

_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


def _varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """The varint at `pos` and the position after it; ValueError when it runs past `end` or over 10 bytes."""
    value = shift = 0
    for at in range(pos, min(end, pos + 10)):
        byte = data[at]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at + 1
        shift += 7
    raise ValueError("a varint runs past its message")


def messages(data: bytes, descriptor: Any, limit: int) -> int:
    """How many messages (nested ones, not the top one) the serialized `descriptor` message `data` holds, counting
    up to `limit` + 1 at most (a count over `limit` says "too many"). A malformed body ends the count where the
    walk stops making sense."""
    count = 0
    stack = [(0, len(data), descriptor)]
    while stack:
        pos, end, desc = stack.pop()
        try:
            while pos < end:
                key, pos = _varint(data, pos, end)
                number, wire = key >> 3, key & 7
                if wire == _VARINT:
                    _, pos = _varint(data, pos, end)
                elif wire == _I64:
                    pos += 8
                elif wire == _I32:
                    pos += 4
                elif wire == _LEN:
                    size, pos = _varint(data, pos, end)
                    field = desc.fields_by_number.get(number)
                    if field is not None and field.message_type is not None and pos + size <= end:
                        count += 1
                        if count > limit:
                            return count
                        stack.append((pos, pos + size, field.message_type))
                    pos += size
                else:  # groups (no OTLP message has one) or garbage: the parser says which
                    break
        except ValueError:
            continue
    return count
