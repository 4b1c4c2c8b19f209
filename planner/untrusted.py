"""Text that came from outside (server bodies, names, labels, log fields) made inert where we write it.

Three sinks, one function each:

- Markdown (the dashboard's st.markdown/st.warning/captions and the Markdown report): `md_text` escapes every
  character Markdown or Streamlit gives meaning to, so `![x](http://…)` is shown, never fetched, and `<script>`
  is text; a bare URL (an endpoint's base URL, a host in an error) is set as code, which GitHub-flavoured
  Markdown never turns into a link.
- CSV (every CSV we write): `csv_cell` neutralises a cell a spreadsheet would run as a formula (OWASP: a leading
  = + - @ tab or carriage return gets a `'` prefix); `csv_text` writes a whole table that way.
- Secrets in error bodies: `mask_secret` replaces the secret *and* any piece of it cut by truncation, so a
  body padded to push the key across a length limit still never shows it.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Iterable, Sequence
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
    """`text` with `secret` replaced by *** wherever it occurs, whole or cut at either end of `text`.

    A body truncated mid-key ends with a prefix of it; one that starts mid-key begins with a suffix: both are
    masked when at least 4 characters long. Apply before any further truncation.
    """
    if not secret:
        return text
    text = text.replace(secret, "***")
    for n in range(len(secret) - 1, _MIN_SECRET_PIECE - 1, -1):
        if text.endswith(secret[:n]):
            text = text[:-n] + "***"
            break
    for n in range(len(secret) - 1, _MIN_SECRET_PIECE - 1, -1):
        if text.startswith(secret[-n:]):
            text = "***" + text[n:]
            break
    return text
