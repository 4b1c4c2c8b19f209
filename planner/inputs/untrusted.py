"""Text that came from outside (server bodies, names, labels, log fields) made inert where we write it.

Three sinks, one function each:

- Markdown (the dashboard's st.markdown/st.warning/captions and the Markdown report): `md_text` escapes every
  character Markdown or Streamlit gives meaning to, so `![x](http://…)` is shown, never fetched, and `<script>`
  is text; a bare URL (an endpoint's base URL, a host in an error) is set as code, which GitHub-flavoured
  Markdown never turns into a link.
- CSV (every CSV we write): `csv_cell` neutralises a cell a spreadsheet would run as a formula (OWASP: a leading
  = + - @ tab or carriage return gets a `'` prefix); `csv_text` writes a whole table that way.
- Secrets in error bodies and messages: `mask_secret` replaces the secret in every encoding a body carries it
  (as written, JSON-escaped, percent-encoded, HTML references, base64 alone or as `user:key`) *and* any piece of it
  cut by truncation, so a server echoing the key escaped, or a body padded to push it across a length limit, still
  never shows it. Every place that masks a secret (a probe's error detail, a URL's password, a source's token) calls
  it.
"""

from __future__ import annotations

import base64
import binascii
import csv
import io
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["FORMULA_PREFIXES", "csv_cell", "csv_text", "mask_secret", "md_text"]

# The characters that start Markdown structure that fetches, hides or restyles text: links and images ([ ] !),
# HTML and autolinks (< >), code, emphasis, tables, headings, strike-through, Streamlit's :red[…] and $math$.
# Punctuation that is harmless in running text (. - : ( ) and _, which never emphasises inside a word such as
# base_url or OPENAI_API_KEY) is left alone so messages stay readable and searchable.
_MD_SPECIAL = re.compile(r"([\\`*\[\]<>#!|~$])")
# What GitHub-flavoured Markdown (Streamlit's renderer) links by itself, with no brackets: http(s)://… and www.…
# (a run up to white space; `|` ends it too, as it ends a Markdown table cell). Trailing punctuation is not part of
# the URL, as GFM reads it.
_BARE_URL = re.compile(r"(?<![A-Za-z0-9])(?:https?://|www\.)[^\s|]+", re.IGNORECASE)
_URL_TRAILING = ".,:;!?*_~'\""
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
_MIN_SECRET_PIECE = 4  # a shorter fragment of a key says nothing about it


def md_text(value: Any) -> str:
    """`value` as Markdown that renders as exactly that text: no links, images, HTML, headings or Streamlit directives.

    A bare URL (http://…, https://…, www.…), which GitHub-flavoured Markdown would turn into a link by itself, is
    set as inline code instead: shown exactly, never clickable. Line breaks become spaces (a single outside value
    is one line of a message). None becomes ''.
    """
    if value is None:
        return ""
    text = " ".join(str(value).splitlines())
    out, at = [], 0
    for m in _BARE_URL.finditer(text):
        url = _url_end(m.group())
        out += [_MD_SPECIAL.sub(r"\\\1", text[at : m.start()]), _code_span(url)]
        at = m.start() + len(url)
    out.append(_MD_SPECIAL.sub(r"\\\1", text[at:]))
    return "".join(out)


def _url_end(run: str) -> str:
    """A bare-URL run without what GFM leaves out of the link: trailing punctuation, a closing parenthesis that
    closes nothing in the URL."""
    while run:
        if run[-1] in _URL_TRAILING:
            run = run[:-1]
        elif run[-1] == ")" and run.count(")") > run.count("("):
            run = run[:-1]
        else:
            break
    return run


def _code_span(text: str) -> str:
    """`text` as an inline code span, shown exactly (a fence longer than any backtick run inside it)."""
    longest = max((len(r) for r in re.findall(r"`+", text)), default=0)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    fence = "`" * (longest + 1)
    return f"{fence}{pad}{text}{pad}{fence}"


def csv_cell(value: Any) -> Any:
    """A CSV cell value a spreadsheet shows instead of running:
    strings starting with = + - @ tab or CR get a `'` prefix.

    Numbers pass unchanged (a negative number is data, not a formula); so do empty strings and None.
    """
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def _cell(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return ""
    return csv_cell(value)


def csv_text(rows: Iterable[Sequence[Any]], header: Sequence[str] | None = None) -> str:
    """Rows (and an optional header) as CSV text with every cell passed through `csv_cell`; NaN/inf become empty.

    Accepts a pandas DataFrame too (its columns are the header).
    """
    if hasattr(rows, "itertuples") and hasattr(rows, "columns"):
        header = [str(c) for c in rows.columns] if header is None else header
        rows = rows.itertuples(index=False, name=None)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    if header is not None:
        writer.writerow([_cell(h) for h in header])
    for row in rows:
        writer.writerow([_cell(v) for v in row])
    return buf.getvalue()


def mask_secret(text: str, secret: str | None) -> str:
    """`text` with `secret` replaced by *** wherever it occurs, in any encoding a server body or a message carries it.

    Found as written; JSON-escaped (`\\/`, `\\uXXXX` of any character, upper or lower hex); percent-encoded (upper or
    lower hex, `+` for a space); as HTML character references; one such encoding inside another (a percent-encoded
    key in a JSON string); and base64 (also URL-safe, padded or not) of the key alone or of `user:key` (Basic
    auth, any user, or none), where the whole base64 run is masked. A piece cut by truncation is masked too: `text`
    ending with the key's first 4+ characters (in any of those encodings, an escape cut mid-way included) or
    starting with its last 4+. Apply before any further truncation. None or '' masks nothing.
    """
    if not secret:
        return text
    cuts: list[tuple[int, int]] = []
    for view in _views(text):
        cuts += _hits(view, secret)
    return _masked(text, cuts)


# ---- mask_secret's machinery: decoded views of a text, each character mapped back to the span it came from ----


def _json_char(m: re.Match[str]) -> str:
    hex4, short = m.groups()
    return chr(int(hex4, 16)) if hex4 else _JSON_SHORT.get(short, short)


def _percent_char(m: re.Match[str]) -> str:
    return " " if m.group() == "+" else chr(int(m.group(1), 16))


def _html_char(m: re.Match[str]) -> str:
    dec, hexa, named = m.groups()
    if named:
        return _HTML_NAMED[named]
    return chr(min(int(dec) if dec else int(hexa, 16), 0x10FFFF))


_JSON_SHORT = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_HTML_NAMED = {"amp": "&", "quot": '"', "lt": "<", "gt": ">", "apos": "'"}
# Each decoder: an escape, the escape cut off at the very end of a text (truncation), the character it stands for.
_Decoder = tuple[re.Pattern[str], re.Pattern[str], Callable[[re.Match[str]], str]]
_DECODERS: tuple[_Decoder, ...] = (
    (re.compile(r"\\(?:u([0-9a-fA-F]{4})|([\\/\"'bfnrt]))"), re.compile(r"\\(?:u[0-9a-fA-F]{0,3})?$"), _json_char),
    (re.compile(r"%([0-9a-fA-F]{2})"), re.compile(r"%[0-9a-fA-F]?$"), _percent_char),
    (re.compile(r"%([0-9a-fA-F]{2})|\+"), re.compile(r"%[0-9a-fA-F]?$"), _percent_char),  # a query's: + is a space
    (
        re.compile(r"&(?:#([0-9]{1,7})|#[xX]([0-9a-fA-F]{1,6})|(amp|quot|lt|gt|apos));"),
        re.compile(r"&#?[xX]?[0-9A-Za-z]{0,7}$"),
        _html_char,
    ),
)
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{8,}")
_TO_THE_END = -1  # a span's end: the original text's end


@dataclass(frozen=True)
class _View:
    """A text decoded some way: `spans[i]` is the (start, end) in the original of decoded character i; `cut` when an
    escape cut off by truncation ended the original (the view's end then stands for the original's)."""

    text: str
    spans: tuple[tuple[int, int], ...]
    cut: bool = False


def _views(text: str) -> list[_View]:
    """The text as written, decoded by each decoder, and by each pair of them in turn; without repeats."""
    raw = _View(text, tuple((i, i + 1) for i in range(len(text))))
    seen, out, frontier = {(text, False)}, [raw], [raw]
    for _depth in range(2):
        found = []
        for view in (_decoded(v, decoder) for v in frontier for decoder in _DECODERS):
            if (view.text, view.cut) not in seen:
                seen.add((view.text, view.cut))
                found.append(view)
        out += found
        frontier = found
    return out


def _decoded(view: _View, decoder: _Decoder) -> _View:
    """`view` with every escape of `decoder` decoded, less an escape cut off at its end."""
    escape, partial, char = decoder
    src, at = view.text, 0
    chars: list[str] = []
    spans: list[tuple[int, int]] = []
    tail = partial.search(src)
    end = tail.start() if tail else len(src)
    for m in escape.finditer(src, 0, end):
        chars.append(src[at : m.start()])
        spans += view.spans[at : m.start()]
        chars.append(char(m))
        spans.append((view.spans[m.start()][0], view.spans[m.end() - 1][1]))
        at = m.end()
    chars.append(src[at:end])
    spans += view.spans[at:end]
    return _View("".join(chars), tuple(spans), view.cut or tail is not None)


def _hits(view: _View, secret: str) -> list[tuple[int, int]]:
    """The spans of the original to mask for what `view` shows of `secret`: whole copies, a truncated piece at
    either end, and base64 runs holding it."""
    text, out = view.text, []
    # a non-ASCII key percent-encoded decodes byte by byte: its UTF-8 bytes read as Latin-1 are looked for too
    for form in dict.fromkeys((secret, secret.encode().decode("latin-1"))):
        at = text.find(form)
        while at >= 0:
            out.append(_span(view, at, at + len(form)))
            at = text.find(form, at + len(form))
        for n in range(len(form) - 1, _MIN_SECRET_PIECE - 1, -1):
            if text.endswith(form[:n]):
                out.append(_span(view, len(text) - n, len(text)))
                break
        for n in range(len(form) - 1, _MIN_SECRET_PIECE - 1, -1):
            if text.startswith(form[-n:]):
                out.append(_span(view, 0, n))
                break
    if len(secret) >= _MIN_SECRET_PIECE:
        for m in _BASE64_RUN.finditer(text):
            padded = len(text) - len(text[m.end() :].lstrip("=")) if text[m.end() :].startswith("=") else m.end()
            padded = min(padded, m.end() + 2)
            if _base64_holds(m.group(), secret.encode(), at_end=padded == len(text)):
                out.append(_span(view, m.start(), padded))
    return out


def _base64_holds(run: str, key: bytes, *, at_end: bool) -> bool:
    """Whether `run` (base64 or URL-safe base64, perhaps starting mid-group) decodes to bytes holding `key`, or,
    when the run ends the text, ending with its first 4+ bytes (a Basic credential cut by truncation)."""
    std = run.replace("-", "+").replace("_", "/")
    for offset in range(min(4, len(std) - 3)):
        chunk = std[offset:]
        chunk = chunk[:-1] if len(chunk) % 4 == 1 else chunk + "=" * (-len(chunk) % 4)  # a last group, padded
        try:
            got = base64.b64decode(chunk, validate=True)
        except binascii.Error:
            continue
        if key in got or (at_end and any(got.endswith(key[:n]) for n in range(_MIN_SECRET_PIECE, len(key)))):
            return True
    return False


def _span(view: _View, start: int, end: int) -> tuple[int, int]:
    """Decoded characters [start, end) of `view` as a span of the original: to the original's end where they end
    a view whose last escape was cut off."""
    if end == len(view.text) and view.cut:
        return (view.spans[start][0] if start < end else _TO_THE_END, _TO_THE_END)
    return (view.spans[start][0], view.spans[end - 1][1])


def _masked(text: str, cuts: list[tuple[int, int]]) -> str:
    """`text` with each span replaced by *** (spans that overlap or touch masked as one)."""
    end = len(text)
    spans = sorted((end if a == _TO_THE_END else a, end if b == _TO_THE_END else b) for a, b in cuts)
    out: list[str] = []
    at = -1  # the end of the last span masked
    for a, b in spans:
        if a >= b or b <= at:
            continue
        if a > at:
            out += [text[max(at, 0) : a], "***"]
        at = b
    out.append(text[max(at, 0) :])
    return "".join(out)
