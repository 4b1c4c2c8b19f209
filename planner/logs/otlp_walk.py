"""Walking OTLP JSON as it comes from outside (a collector's file, an OTLP/HTTP body): any level may hold any type.

An export nests lists of objects (resourceSpans → scopeSpans → spans, resourceMetrics → scopeMetrics → metrics →
dataPoints). `entries` yields each object of one such list with its place ("resourceSpans[0].scopeSpans[2]"), and a
Reject naming the place of each entry that is not an object (or of the list, when it is not a list), so one malformed
entry is counted and named while the rest are read. `attributes` reads OTLP's key/value list, `any_value` its
AnyValue, and `shown` pictures an outside value in a message in at most ~40 characters, whatever its type or size;
`storable` makes outside text a column can take (no NUL, no lone surrogate: JSON's "\\ud800" is a Python str that
UTF-8, hence every database driver, refuses).
`Refusals` counts what a reader refused and keeps the first reasons only: an export of millions of bad entries
costs a number, not millions of messages.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from planner.logs.records import Reject

__all__ = ["MAX_REASONS_KEPT", "Refusals", "any_value", "attributes", "entries", "shown", "storable"]

MAX_REASONS_KEPT = 20  # an answer names the first few; the count says how many in all

#: AnyValue's fields (OTLP JSON's names): exactly one is set.
_ANY_VALUE_KEYS = ("stringValue", "intValue", "doubleValue", "boolValue", "arrayValue", "kvlistValue", "bytesValue")
_SHOWN_CHARS = 40
_SURROGATE = re.compile("[\ud800-\udfff]")  # in a str from JSON only unpaired: json pairs the others
_JSON_TYPE: dict[type, str] = {dict: "an object", list: "an array"}


def shown(value: Any) -> str:
    """`value` for a message: a scalar as its repr (cut to 40 characters), anything else as its JSON type ("an
    array"): never a deep or huge repr, which could raise (RecursionError, an int's digit limit) or flood a log."""
    if value is None or isinstance(value, bool | float):
        return repr(value)
    if isinstance(value, int):
        return str(value) if abs(value) < 10**_SHOWN_CHARS else f"an integer of {value.bit_length()} bits"
    if isinstance(value, str):
        return repr(value[:_SHOWN_CHARS])
    return _JSON_TYPE.get(type(value), f"a {type(value).__name__}")


def storable(text: str, limit_chars: int) -> str:
    """`text` cut to `limit_chars`, with NULs dropped (PostgreSQL refuses them) and lone surrogates as U+FFFD."""
    return _SURROGATE.sub("\ufffd", text.replace("\x00", ""))[:limit_chars]


def entries(parent: Mapping[str, Any], keys: tuple[str, ...], where: str = "") -> Iterator[tuple[str, Any]]:
    """(place, object) for each object in the list `parent` holds under the first of `keys` present (OTLP renamed
    some lists: scopeSpans was instrumentationLibrarySpans), and (place, Reject) for each entry that is not an object,
    or once for the list when it is not a list. Nothing when no key is present or its value is null. `where` is
    the parent's place ("" for the export itself)."""
    key = next((k for k in keys if k in parent), keys[0])
    got = parent.get(key)
    place = f"{where}.{key}" if where else key
    if got is None:
        return
    if not isinstance(got, list):
        yield place, Reject(f"{place} is {shown(got)}, not an array")
        return
    for i, item in enumerate(got):
        if isinstance(item, dict):
            yield f"{place}[{i}]", item
        else:
            yield f"{place}[{i}]", Reject(f"{place}[{i}] is {shown(item)}, not an object")


def any_value(value: Any) -> Any:
    """The value an OTLP AnyValue holds ({"intValue": "3"} → "3"; an arrayValue or kvlistValue as its JSON); a plain
    value as it is (attributes written as a plain object); None for an object that is no AnyValue."""
    if isinstance(value, dict):
        return next((value[k] for k in _ANY_VALUE_KEYS if k in value), None)
    return value


def attributes(items: Any, field: str = "attributes") -> dict[str, Any]:
    """OTLP attributes ([{"key", "value": AnyValue}], or a plain object as some exporters write them) as {key:
    value}; {} for none. Raises Reject naming `field` when they are neither a list nor an object, or when an entry is
    not an object with a string key."""
    if items is None:
        return {}
    if isinstance(items, dict):
        return dict(items)
    if not isinstance(items, list):
        raise Reject(f"{field} is {shown(items)}, not a list of key/value pairs")
    out: dict[str, Any] = {}
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            raise Reject(f"{field}[{i}] is {shown(item)}, not a key/value pair with a text key")
        out[item["key"]] = any_value(item.get("value"))
    return out


class Refusals:
    """What a reader refused: `count` in all, and the first MAX_REASONS_KEPT `reasons`."""

    def __init__(self) -> None:
        self.count = 0
        self.reasons: list[str] = []

    def add(self, reason: str) -> None:
        self.count += 1
        if len(self.reasons) < MAX_REASONS_KEPT:
            self.reasons.append(reason)

    def extend(self, reasons: Iterable[str]) -> None:
        for reason in reasons:
            self.add(reason)

    def __len__(self) -> int:
        return self.count
