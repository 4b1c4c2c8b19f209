"""The Python record reader: one record — a JSON line's text, a CSV record's, or a record already parsed — made into
request rows or the reason it is left out, by the format's reader (planner.logs.formats, .mapped, .otel) and the
rule of planner.logs.records.

It is the one fallback of every format and path: it reads the records DuckDB did not (a line it could not parse,
a value SQL leaves to Python: planner.logs.sqlmap's DOUBT) and names those the rule refuses (BAD), from their text
alone (planner.logs.split); and it reads every record of the formats SQL does not map (Anthropic, Batch, LiteLLM,
Langfuse and OTel records, prompt text to count, hash_ids to replay through a prefix cache).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from planner.logs import otel
from planner.logs.formats import EXTRACTORS, classify
from planner.logs.gateways import Skip
from planner.logs.records import TIME_NOTES, Reject, Row

__all__ = ["NOT_UTF8", "SKIPPED", "RecordReader", "csv_fields", "json_error", "too_long"]

NOT_UTF8 = "not valid UTF-8; save the log as UTF-8"
SKIPPED = "skipped"  # a record that is not a model call (a Langfuse SPAN, an HTTP span): counted, not named
_FIELD_LIMIT = 1 << 30  # a record is already cut at the reader's line limit; the csv module must not cut it again


def too_long(limit: int) -> str:
    """Why a line over `limit` bytes is not read."""
    return f"a line over {limit >> 20} MiB: too long to be a log record"


def json_error(exc: ValueError | RecursionError) -> str:
    """A user-facing reason for a line json.loads refused."""
    if isinstance(exc, RecursionError):
        return "not a log record: JSON nested too deeply"
    if isinstance(exc, UnicodeDecodeError):
        return f"not valid UTF-8 (byte 0x{exc.object[exc.start]:02x} at column {exc.start + 1}); save the log as UTF-8"
    if isinstance(exc, json.JSONDecodeError):
        # Some messages already end in "at" ("Unterminated string starting at"): the column completes them.
        return f"not valid JSON: {exc.msg.removesuffix(' at')} at column {exc.colno}"
    return f"not valid JSON: {exc}"


def _first(pairs: list[tuple[str, object]]) -> dict:
    """An object's keys in order, the first value of a key given twice (as DuckDB's JSON reader takes it), counted."""
    out = dict(pairs)
    if len(out) != len(pairs):
        out, twice = {}, []
        for key, value in pairs:
            if key in out:
                twice.append(key)
            else:
                out[key] = value
        if (notes := TIME_NOTES.get()) is not None:
            notes.twice += 1
            notes.twice_key = notes.twice_key or twice[0]
    return out


def parse_json(text: bytes) -> dict | str:
    """A JSON line as an object (a key given twice: its first value, counted in TIME_NOTES), or why it is not one."""
    try:
        rec = json.loads(text, object_pairs_hook=_first)
    except (ValueError, RecursionError) as exc:
        return json_error(exc)
    return rec if isinstance(rec, dict) else "not a JSON object"


def csv_fields(text: bytes, delimiter: str) -> list[str] | str:
    """A CSV record's fields (RFC 4180 quoting), or why it has none (not UTF-8, not CSV)."""
    try:
        decoded = text.decode("utf-8")
    except UnicodeDecodeError:
        return NOT_UTF8
    if csv.field_size_limit() < _FIELD_LIMIT:
        csv.field_size_limit(_FIELD_LIMIT)
    try:
        return next(csv.reader(io.StringIO(decoded, newline=""), delimiter=delimiter, quotechar='"', strict=False), [])
    except csv.Error as exc:
        return f"not valid CSV: {exc}"


def _wrong_width(n: int, width: int) -> str:
    """Why a CSV record of n fields under a header of `width` is left out."""
    hint = " (a field with the delimiter or a line break needs double quotes)" if n > width else ""
    return f"has {n} field{'' if n == 1 else 's'}, the header has {width}{hint}"


@dataclass
class RecordReader:
    """Reads one file's records in Python: `fmt` its format (a record format of planner.logs.formats, "otel", or
    a tabular one read by `mapped`: a record → Row under the file's column mapping)."""

    fmt: str
    tz: str
    mapped: Callable[[Mapping], Row] | None = None
    header: Sequence[str] = ()  # a CSV file's columns
    delimiter: str = ","
    limit: int = 16 << 20  # a record longer is not read

    def record(self, rec: Mapping) -> Iterator[Row | str]:
        """The rows of one parsed record (an OTel export holds many spans), or the reason it is not one, or
        SKIPPED."""
        try:
            if self.fmt == "otel":
                for item in otel.spans(dict(rec), self.tz):
                    yield str(item) if isinstance(item, Reject) else item
                return
            yield self.mapped(rec) if self.mapped is not None else EXTRACTORS[self.fmt](dict(rec), self.tz)
        except Skip:
            yield SKIPPED
        except RecursionError:
            yield "nested too deeply to be a log record"
        except Reject as exc:
            other = classify(dict(rec)) if self.mapped is None else None
            if other is not None and other != self.fmt:
                yield f"looks like a {other} record, but this file is {self.fmt} ({exc})"
            else:
                yield str(exc)

    def text(self, text: bytes, size: int) -> Iterator[Row | str]:
        """The rows of one record's text (a JSON line, or a CSV record under `header`), or why it has none."""
        if size > self.limit:
            yield too_long(self.limit)
            return
        if self.header:
            values = csv_fields(text, self.delimiter)
            if isinstance(values, str):
                yield values
            elif not any(v.strip() for v in values):
                return  # a line of white space: no record
            elif len(values) != len(self.header):
                yield _wrong_width(len(values), len(self.header))
            else:
                yield from self.record(dict(zip(self.header, values, strict=True)))
            return
        if not text.strip():
            return
        rec = parse_json(text)
        if isinstance(rec, str):
            yield rec
        else:
            yield from self.record(rec)
