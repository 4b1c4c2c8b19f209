"""Outside text made inert: Markdown (page and export), CSV cells (spreadsheet formulas), secrets cut by truncation."""

from __future__ import annotations

import csv
import io
import re

import pandas as pd
import pytest

from planner.inputs.untrusted import csv_cell, csv_text, mask_secret, md_text
from planner.probes.errors import scrub

HOSTILE = [
    "![status](http://attacker.example/pixel.png)",
    "[click](javascript:alert(1))",
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    ":red[forged] :material/warning:",
    "# Heading\n\n| a | b |",
    "$x^2$ `code` *bold* ~~gone~~",
]


def _split_code(md: str) -> tuple[str, list[str]]:
    """(the Markdown outside inline code spans, the spans' contents), reading backtick fences as CommonMark does
    (a backslash-escaped backtick opens nothing)."""
    outside, spans, i = [], [], 0
    while i < len(md):
        if md[i] == "\\":
            outside.append(md[i : i + 2])
            i += 2
            continue
        if md[i] == "`":
            fence = re.match(r"`+", md[i:]).group()
            close = re.search(rf"(?<!`){fence}(?!`)", md[i + len(fence) :])
            if close:
                body = md[i + len(fence) : i + len(fence) + close.start()]
                spans.append(body[1:-1] if body.startswith(" ") and body.endswith(" ") and body.strip() else body)
                i += len(fence) + close.end()
                continue
        outside.append(md[i])
        i += 1
    return "".join(outside), spans


# What remark-gfm (Streamlit's Markdown) turns into a link by itself in plain text (mdast-util-gfm-autolink-literal).
GFM_AUTOLINK = re.compile(r"(https?://|www(?=\.))([-.\w]+)", re.IGNORECASE)


@pytest.mark.parametrize("text", HOSTILE)
def test_md_text_leaves_no_markdown_structure(text):
    out = md_text(text)
    outside, spans = _split_code(out)
    # every character that opens a link, an image, HTML, code or a Streamlit directive is escaped; the only code
    # spans are the bare URLs md_text sets as code
    assert all(GFM_AUTOLINK.match(s) for s in spans), (spans, out)
    for ch in "[]!<>`*|#$~":
        for i, c in enumerate(outside):
            if c == ch:
                assert outside[i - 1] == "\\", (ch, out)
    assert "\n" not in out


def test_md_text_keeps_ordinary_text_readable():
    assert (
        md_text("HTTP 401 from https://api.example.com/v1: invalid key (see docs).")
        == "HTTP 401 from `https://api.example.com/v1`: invalid key (see docs)."
    )
    assert md_text("Base URL must start with http:// or https://") == "Base URL must start with http:// or https://"
    assert md_text(None) == ""


@pytest.mark.parametrize(
    ("text", "url"),
    [
        ("probe · manual: sim-1 @ http://127.0.0.1:8000/v1 (openai-chat) · n=240", "http://127.0.0.1:8000/v1"),
        ("endpoint at https://api.acme.example/v1.", "https://api.acme.example/v1"),
        ("mirror www.example.com, then", "www.example.com"),
        ("(see https://x.example/a_(b))", "https://x.example/a_(b)"),
        ("| HTTPS://Shout.example/v1|next", "HTTPS://Shout.example/v1"),
        ("odd http://h.example/`x`` y", "http://h.example/`x``"),
    ],
)
def test_a_base_url_in_markdown_is_literal_code_never_an_auto_link(text, url):
    """Issue 28: GitHub-flavoured Markdown links a bare http(s):// or www. URL by itself (a base URL in a provenance
    caption became clickable); md_text sets it as inline code, which shows it exactly and is never linked."""
    outside, spans = _split_code(md_text(text))
    assert not GFM_AUTOLINK.search(outside), outside  # nothing left for the renderer to link
    assert url in spans  # the URL itself, exactly, as code


@pytest.mark.parametrize("cell", ['=HYPERLINK("http://x","y")', "@SUM(A1:A9)", "+1+2", "-2+3", "\tx", "\r=1"])
def test_csv_cell_neutralises_formulas(cell):
    assert csv_cell(cell) == "'" + cell


def test_csv_cell_keeps_numbers_and_plain_text():
    assert csv_cell(-3.5) == -3.5 and csv_cell(0) == 0 and csv_cell("fast-a") == "fast-a" and csv_cell("") == ""


def test_csv_text_round_trips_with_every_cell_safe():
    frame = pd.DataFrame({"endpoint": ["=cmd|' /C calc'!A0", "ok"], "p95_ms": [12.5, float("nan")]})
    text = csv_text(frame)
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["endpoint", "p95_ms"]
    assert rows[1] == ["'=cmd|' /C calc'!A0", "12.5"] and rows[2] == ["ok", ""]
    assert not any(cell.startswith(("=", "+", "@")) for row in rows for cell in row)


KEY = "sk-test-0123456789abcdefghijklmnopq"  # 35 characters


def test_a_key_cut_by_truncation_is_masked_whole():
    body = " " * 2000 + "invalid api key " + KEY
    cut = body[:2048]  # the probe keeps the first 2,048 bytes of an error body: the key is cut mid-way
    assert KEY[:10] in cut and KEY not in cut
    detail = scrub(f"HTTP 401 from https://api.example.com/v1/chat/completions: {cut}", KEY)
    assert "sk-test" not in detail and "***" in detail
    for n in range(4, len(KEY)):
        assert KEY[:n] not in detail


def test_mask_secret_masks_a_leading_suffix_and_whole_copies():
    assert mask_secret(KEY[-12:] + " tail " + KEY, KEY) == "*** tail ***"
    assert mask_secret("nothing here", KEY) == "nothing here"
    assert mask_secret("abc", None) == "abc"


def test_the_worksheet_markdown_export_escapes_names_and_notes():
    import re

    from planner.worksheet.budget import Worksheet
    from planner.worksheet.report import to_markdown

    ws = Worksheet.from_dict(
        {
            "name": "plan ![i](http://attacker.invalid/p.png) <script>alert(1)</script>",
            "notes": "see ![i](http://attacker.invalid/q.png)\n<img src=x>",
        }
    )
    text = to_markdown(ws)
    assert "attacker.invalid/p.png" in text and "attacker.invalid/q.png" in text
    assert not re.search(r"(?<!\\)!(?<!\\)\[|(?<!\\)\]\(|(?<!\\)<\s*(script|img)", text)


def test_every_csv_we_write_goes_through_csv_text():
    """A new CSV export that bypasses csv_text would let `=HYPERLINK(…)` names run in a spreadsheet again."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    writers = re.compile(r"\.to_csv\(|csv\.writer\(|csv\.DictWriter\(")
    offenders = [
        str(p.relative_to(root))
        for d in ("planner", "app")
        for p in (root / d).rglob("*.py")
        if p.name != "untrusted.py" and writers.search(p.read_text(encoding="utf-8"))
    ]
    assert offenders == [], f"write CSV with planner.inputs.untrusted.csv_text instead: {offenders}"


@pytest.mark.parametrize("pad", [2000, 2030, 2047 - len("invalid key ")])
def test_a_401_body_padded_to_cut_the_key_leaks_none_of_it(pad):
    """The attack of the issue against a real local server: whitespace pushes the echoed key across the 2 KiB cut."""
    import asyncio

    from planner.probes.ttft import ProbeTarget, probe_once
    from tests.support.servers import Script, ScriptedServer, Step

    body = (" " * pad + "invalid key " + KEY).encode()
    script = Script(
        status=401, reason="Unauthorized", headers={"Content-Type": "text/plain"}, steps=[Step(body)], chunked=False
    )
    with ScriptedServer(script) as server:
        sample = asyncio.run(
            probe_once(ProbeTarget(base_url=server.url, model="m", prompt_tokens=20), api_key=KEY, max_attempts=1)
        )
    assert sample.error_class == "auth" and "invalid key" in sample.error_detail
    assert not any(KEY[:n] in sample.error_detail for n in range(4, len(KEY) + 1)), sample.error_detail
