"""The hostile corpus: every case, and which kinds of input it applies to.

A case is one of:
- a body (`body`): the same bytes whoever reads them (JSON nested 100,000 deep, an HTML page, an empty body…);
- a transform (`transform`): applied to the reader's own good document (a BOM before it, UTF-16, NUL bytes in it…);
- a value (`value`): put in every slot of the reader's document where a value goes (a count, a time, a name, a list…);
- a time (`epoch_s`, seconds since 1970, any size): put in every time slot, in the reader's own unit;
- a behaviour (`behaviour`): what the server, the database or the file does (drips, never answers, never accepts,
  never ends, inflates 1000:1);
- a secret (`echo`, `dsn_form`, `pasted`): the reader's own credential echoed back by the server in an encoding, a
  database URL carrying its password in one of libpq's forms, or a key pasted where a variable's name belongs.

The kinds: HTTP (a server's answer), FILE (a file given to a command), ROW (a row of a database the reader reads),
EXPORT (a body posted to a receiver). `heavy` cases (huge bodies, bombs, endless files) run in a subprocess whose peak
RSS is read (tests/support/hostile/heavy.py).
"""

from __future__ import annotations

import functools
import json
import math
import os
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "API_KEY",
    "BOMB_DIR_VARIABLE",
    "CASES",
    "CORPUS",
    "DSN_PASSWORD",
    "EXPORT",
    "FILE",
    "HTTP",
    "HUGE_BYTES",
    "KINDS",
    "NO_VALUE",
    "OTLP_TOKEN",
    "PASTED_KEY",
    "PROM_TOKEN",
    "ROW",
    "SECRETS",
    "HOLE",
    "Case",
    "deep_json",
    "cut_gzip",
    "embed",
    "json_text",
    "gzip_bomb",
    "zstd_bomb",
]

HTTP, FILE, ROW, EXPORT = "http body", "file", "db row", "export"
KINDS = (HTTP, FILE, ROW, EXPORT)

# The readers' credentials: each with a `/`, a `+` and a `=`, so its JSON-escaped, percent-encoded and base64 forms
# all differ from it.
API_KEY = "sk-hostile/Corpus+Key=7f3a9c0d"
PROM_TOKEN = "prom/Bearer+Token=4b2e8d61"
OTLP_TOKEN = "otlp/Receiver+Token=9c1f"
DSN_PASSWORD = "pg/Pass+word=6e0b"
PASTED_KEY = "sk-pasted/Secret+Key=5d1e77aa"
SECRETS = (API_KEY, PROM_TOKEN, OTLP_TOKEN, DSN_PASSWORD, PASTED_KEY)

DEEP_LEVELS = 100_000
SMALL_DEEP_LEVELS = 3_000  # 6 KB: fits any size cap, still past every recursive parser's stack
HUGE_BYTES = 400 << 20  # a huge body: streamed lazily, never built in memory
BOMB_INFLATED_BYTES = 1100 << 20  # past every cap (the log reader's 1 GiB included)
CUT_GZ_BYTES = 24 << 20  # inflated before the cut: past the 16 MiB the log reader's opening inflates
_MiB = 1 << 20


class _NoValue:
    def __repr__(self) -> str:
        return "NO_VALUE"


NO_VALUE: Any = _NoValue()


@dataclass(frozen=True)
class Case:
    """One hostile case (module docstring); `kinds` are the kinds of input it applies to."""

    id: str
    kinds: frozenset[str]
    body: bytes | None = None
    transform: Callable[[bytes], bytes] | None = None
    value: Any = NO_VALUE
    epoch_s: float | None = None
    behaviour: str | None = None
    echo: str | None = None
    dsn_form: str | None = None
    pasted: str | None = None
    heavy: bool = False

    @property
    def role(self) -> str:
        """body | transform | value | time | behaviour | echo | dsn | pasted."""
        for role, given in (
            ("body", self.body is not None),
            ("transform", self.transform is not None),
            ("value", self.value is not NO_VALUE),
            ("time", self.epoch_s is not None),
            ("behaviour", self.behaviour is not None),
            ("echo", self.echo is not None),
            ("dsn", self.dsn_form is not None),
            ("pasted", self.pasted is not None),
        ):
            if given:
                return role
        raise AssertionError(f"case {self.id!r} holds nothing")


HOLE = "\x00hole\x00"  # where embed() puts the case's value in a template


def json_text(value: Any) -> str:
    """`value` as JSON text (NaN and ±Infinity as Python writes them), a list nested any depth included."""
    try:
        return json.dumps(value)
    except RecursionError:
        depth = 0
        while isinstance(value, list) and len(value) == 1:
            value, depth = value[0], depth + 1
        return "[" * depth + json.dumps(value) + "]" * depth


def embed(template: Any, value: Any) -> str:
    """The JSON text of `template` with `value` where HOLE stands (as a key's value or a list's item)."""
    return json.dumps(template).replace(json.dumps(HOLE), json_text(value))


def deep_json(levels: int, kind: str = "list") -> bytes:
    """A JSON array (or object, `kind="object"`) nested `levels` deep."""
    if kind == "list":
        return b"[" * levels + b"1" + b"]" * levels
    return b'{"a":' * levels + b"1" + b"}" * levels


BOMB_DIR_VARIABLE = "HOSTILE_CORPUS_BOMB_DIR"  # a folder where the bombs are kept once made (the heavy runner's too)


def _kept(name: str, make: Callable[[], bytes]) -> bytes:
    """`make()`, kept in $HOSTILE_CORPUS_BOMB_DIR when it names a folder (made once for every process of a run)."""
    folder = os.environ.get(BOMB_DIR_VARIABLE)
    path = Path(folder) / name if folder else None
    if path is not None and path.exists():
        return path.read_bytes()
    data = make()
    if path is not None:
        path.write_bytes(data)
    return data


@functools.cache
def gzip_bomb() -> bytes:
    """A gzip stream of BOMB_INFLATED_BYTES zero bytes, ~1,000:1."""
    return _kept("bomb.gz", _make_gzip_bomb)


@functools.cache
def zstd_bomb() -> bytes:
    """A zstd frame of BOMB_INFLATED_BYTES zero bytes (zstd packs zeros far past 1,000:1)."""
    return _kept("bomb.zst", _make_zstd_bomb)


def _make_gzip_bomb() -> bytes:
    """Built from one deflate block repeated (each ends in a full flush, so each is the same bytes): 1 MB of gzip,
    made in a second rather than compressing a gigabyte."""
    block = bytes(_MiB)
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = deflate.compress(block) + deflate.flush(zlib.Z_FULL_FLUSH)
    again = deflate.compress(block) + deflate.flush(zlib.Z_FULL_FLUSH)
    end = deflate.flush(zlib.Z_FINISH)
    blocks = BOMB_INFLATED_BYTES // _MiB
    crc = 0
    for _ in range(blocks):
        crc = zlib.crc32(block, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    return header + first + again * (blocks - 1) + end + struct.pack("<II", crc, BOMB_INFLATED_BYTES & 0xFFFFFFFF)


def _make_zstd_bomb() -> bytes:
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    block = bytes(_MiB)
    with pa.CompressedOutputStream(sink, "zstd") as out:
        for _ in range(BOMB_INFLATED_BYTES // _MiB):
            out.write(block)
    return sink.getvalue().to_pybytes()


def cut_gzip(doc: bytes) -> bytes:
    """`doc` repeated to CUT_GZ_BYTES, gzipped and cut before its end: the cut falls far past the first MiBs a reader
    inflates to check a file (a bomb, a size cap)."""
    whole = zlib.compressobj(1, zlib.DEFLATED, 31)  # 31: a gzip header and trailer
    packed = whole.compress(doc * (CUT_GZ_BYTES // max(len(doc), 1) + 1)) + whole.flush()
    return packed[: len(packed) * 9 // 10]


def _middle(insert: bytes) -> Callable[[bytes], bytes]:
    def transform(doc: bytes) -> bytes:
        half = len(doc) // 2
        return doc[:half] + insert + doc[half:]

    return transform


def _utf16(doc: bytes) -> bytes:
    """`doc` as UTF-16 with its BOM, as Windows tools write text (a binary document's bytes taken as Latin-1)."""
    try:
        text = doc.decode("utf-8")
    except UnicodeDecodeError:
        text = doc.decode("latin-1")
    return text.encode("utf-16")


_ALL = frozenset(KINDS)
_NOT_ROW = frozenset({HTTP, FILE, EXPORT})
_BYTES = _NOT_ROW  # a database row holds text and numbers, never raw bytes


def _cases() -> list[Case]:
    out = [
        Case("deep JSON list 100,000 levels", _BYTES, body=deep_json(DEEP_LEVELS)),
        Case("deep JSON object 100,000 levels", _BYTES, body=deep_json(DEEP_LEVELS, "object")),
        Case("deep JSON 3,000 levels in 6 KB", _BYTES, body=deep_json(SMALL_DEEP_LEVELS)),
        Case("empty body", _BYTES, body=b""),
        Case("HTML error page", _BYTES, body=b"<html><body><h1>502 Bad Gateway</h1></body></html>\n"),
        Case("top-level JSON string", _BYTES, body=b'"success"\n'),
        Case("an integer of 5,000 digits", _BYTES, body=b'{"data": ' + b"9" * 5000 + b"}\n"),
        Case("UTF-8 BOM", _BYTES, transform=lambda doc: b"\xef\xbb\xbf" + doc),
        Case("UTF-16 body", _BYTES, transform=_utf16),
        Case("invalid UTF-8", _BYTES, transform=_middle(b"\xff\xfe\xc3\x28")),
        Case("NUL bytes", _BYTES, transform=lambda doc: _middle(b"\x00\x00")(doc) + b"\x00"),
        Case("cut in half", _BYTES, transform=lambda doc: doc[: len(doc) // 2]),
    ]
    # values: the database holds no NaN, infinity, NUL or lone surrogate in its columns (its types refuse them)
    values: list[tuple[str, Any, frozenset[str]]] = [
        ("NaN", math.nan, _NOT_ROW),
        ("Infinity", math.inf, _NOT_ROW),
        ("-Infinity", -math.inf, _NOT_ROW),
        ("-1", -1, _ALL),
        ("1e308", 1e308, _ALL),
        ("2^63", 2**63, _ALL),
        ("2^64", 2**64, _ALL),
        ("10^400", 10**400, _ALL),
        ("1.5 where a whole number goes", 1.5, _ALL),
        ("the string abc", "abc", _ALL),
        ("an empty string", "", _ALL),
        ("null", None, _ALL),
        ("true", True, _ALL),
        ("an empty list", [], _ALL),
        ("an empty object", {}, _ALL),
        ("unicode digits ²³", "²³", _ALL),
        ("a NUL inside a string", "a\x00b", _NOT_ROW),
        ("a lone surrogate", "\ud800", _NOT_ROW),
        ("a string of 100,000 characters", "x" * 100_000, _ALL),
        ("a list 3,000 deep", functools.reduce(lambda v, _: [v], range(SMALL_DEEP_LEVELS), 1), _ALL),
    ]
    out += [Case(f"value {name}", kinds, value=v) for name, v, kinds in values]
    times = [
        ("year 2999", 32_503_680_000.0),
        ("year 0", -62_167_219_200.0),
        ("before 1970 (-1 s)", -1.0),
        ("1e308 ns", 1e299),
    ]
    out += [Case(f"time {name}", frozenset({HTTP, FILE, ROW, EXPORT}), epoch_s=s) for name, s in times]
    out += [
        Case("a server that drips one byte at a time", frozenset({HTTP}), behaviour="drip"),
        # HTTP and ROW: accepts and never answers; FILE: a named pipe nobody writes
        Case("a black hole", frozenset({HTTP, ROW, FILE}), behaviour="black_hole"),
        Case("a port that never accepts", frozenset({HTTP, ROW}), behaviour="never_accepts"),
        Case(f"a huge body ({HUGE_BYTES >> 20} MB, streamed)", _BYTES, behaviour="huge", heavy=True),
        Case("an endless file (/dev/zero)", frozenset({FILE}), behaviour="endless", heavy=True),
        Case("a gzip bomb (1,000:1)", _BYTES, behaviour="gzip_bomb", heavy=True),
        Case("a zstd bomb", _BYTES, behaviour="zstd_bomb", heavy=True),
        Case(f"a .gz cut after {CUT_GZ_BYTES >> 20} MB of good records", frozenset({FILE}), behaviour="cut_gz"),
    ]
    echoes = ("as sent", "JSON-escaped", "as \\u escapes", "URL-encoded", "base64", "Basic base64 user:key")
    out += [Case(f"the credential echoed {e}", frozenset({HTTP}), echo=e) for e in echoes]
    dsn_forms = ("userinfo", "password= in the query", "sslpassword= in the query", "an unencoded @")
    out += [Case(f"a database URL's password in {f}", frozenset({ROW}), dsn_form=f) for f in dsn_forms]
    out.append(Case("a key pasted where a variable name goes", frozenset({FILE}), pasted=PASTED_KEY))
    return out


CORPUS: list[Case] = _cases()
CASES: dict[str, Case] = {c.id: c for c in CORPUS}
assert len(CASES) == len(CORPUS), "case ids are unique"
