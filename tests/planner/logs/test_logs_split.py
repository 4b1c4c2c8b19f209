"""The splitter (planner/logs/split.py), the one place a record's line comes from: RFC-4180 records as Python's csv
module splits them (quoted line breaks, doubled quotes, a stray quote inside an unquoted field, CRLF), JSON lines
with blank lines, a BOM and a cut tail, whatever the window the bytes are read in."""

from __future__ import annotations

import csv
import gzip
import io
import random

import pytest

from planner.logs import split


def _field(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.5:
        return "".join(rng.choice("ab1 ") for _ in range(rng.randint(0, 4)))
    if roll < 0.9:
        return '"' + "".join(rng.choice(["a", ",", "\n", '""', " ", "\r\n"]) for _ in range(rng.randint(0, 5))) + '"'
    return 'x"y'  # a quote inside an unquoted field: text, not a quoted field's start


def _csv_starts(text: str) -> list[int]:
    """The line each non-empty record starts on, as Python's csv module reads the text."""
    out, prev = [], 0
    reader = csv.reader(io.StringIO(text, newline=""))
    for values in reader:
        if values:
            out.append(prev + 1)
        prev = reader.line_num
    return out


@pytest.mark.parametrize("seed", range(40))
def test_csv_records_start_on_the_lines_python_s_csv_module_gives_in_any_window(seed):
    rng = random.Random(seed)
    newline = rng.choice(["\n", "\r\n"])
    text = "h1,h2,h3" + newline + newline.join(",".join(_field(rng) for _ in range(3)) for _ in range(25)) + newline
    for window in (7, 13, 64, 1 << 20):
        got = [f.line for f in split.records(text.encode(), "none", split.CSV, window=window, keep=1000)]
        assert got == _csv_starts(text), (window, text[:200])


def test_json_lines_are_counted_as_an_editor_counts_them():
    body = b'\xef\xbb\xbf{"a": 1}\r\n\r\n  \t\n{"a": 2}\n\x0c\n{"a": 3}\r\n{"a": 4, "cut'
    for window in (5, 11, 1 << 20):
        got = [(f.line, f.text) for f in split.records(body, "none", split.LINES, window=window, keep=1000)]
        assert got == [(1, b'{"a": 1}'), (4, b'{"a": 2}'), (6, b'{"a": 3}'), (7, b'{"a": 4, "cut')]
    packed = [(f.line, f.text) for f in split.records(gzip.compress(body), "gzip", split.LINES, window=8, keep=99)]
    assert packed == got


def test_a_refused_record_is_found_by_a_byte_inside_it_and_places_skip_it():
    text = b"ts,m\r\n1,a\r\nBAD\r\n2,b\r\n3,c\r\n"
    at = text.index(b"BAD") + 1  # DuckDB gives a record's first byte, or (LF files) the one after it
    got = split.locate(text, "none", split.CSV, [1], [at], 3, window=4, keep=99)
    assert [(f.line, f.text) for f in got] == [(3, b"BAD"), (4, b"2,b")]
    assert split.locate(text, "none", split.CSV, [1], [at], 4, window=4, keep=99) is None  # another count: unsure


def _survey_cases(seed: int) -> tuple[bytes, str, list[int], list[int], int]:
    """A random CSV (quoted breaks, CRLF, blank lines, maybe a cut tail) or JSON Lines file, some rows' places and
    some records' offsets to find, and how many rows DuckDB would have read."""
    rng = random.Random(seed)
    grammar = rng.choice([split.CSV, split.LINES])
    newline = rng.choice(["\n", "\r\n"])
    if grammar == split.CSV:
        rows = [",".join(_field(rng) for _ in range(3)) for _ in range(300)]
        text = "h1,h2,h3" + newline + newline.join(rows)
    else:
        rows = [f'{{"n": {k}, "s": "{"x" * rng.randint(0, 30)}"}}' for k in range(300)]
        text = newline.join(r if rng.random() > 0.05 else "  " + newline + r for r in rows)
    text += newline if rng.random() < 0.7 else ""  # else a cut tail
    body = (b"\xef\xbb\xbf" if rng.random() < 0.3 else b"") + text.encode()
    every = list(split.records(body, "none", grammar, window=1 << 20, keep=1 << 20))
    records = every[1:] if grammar == split.CSV else every  # a CSV file's header is not a row
    refused = rng.sample(range(len(records)), 3)
    offsets = [records[k].offset + rng.randint(0, max(0, records[k].size - 1)) for k in refused]
    n_rows = len(records) - len(refused)
    places = sorted(rng.sample(range(n_rows), 4)) + [n_rows - 1]
    return body, grammar, places, offsets, n_rows


@pytest.mark.parametrize("seed", range(30))
def test_with_its_survey_only_the_windows_holding_the_records_are_walked_and_they_are_the_same(seed):
    """The Survey (made while DuckDB reads a compressed CSV file) lets locate skip to the windows it needs: it finds
    the very records a walk of the whole file finds, plain (seeking) or gzipped (inflating past the rest)."""
    body, grammar, places, offsets, n_rows = _survey_cases(seed)
    for window in (37, 256, 1 << 20):
        for data, compression in ((body, "none"), (gzip.compress(body), "gzip")):
            whole = split.locate(data, compression, grammar, places, offsets, n_rows, window=window, keep=1000)
            assert whole is not None and len(whole) == len(places) + len(offsets)
            surveyed = split.survey(data, compression, grammar, window=max(1, window // 3), keep=1000)
            assert surveyed is not None
            got = split.locate(
                data, compression, grammar, places, offsets, n_rows, window=window, keep=1000, surveyed=surveyed
            )
            assert got == whole, (window, compression)
            # a count the survey does not agree with: unsure, as without it
            assert (
                split.locate(
                    data, compression, grammar, places, offsets, n_rows + 1, window=window, keep=1000, surveyed=surveyed
                )
                is None
            )


@pytest.mark.parametrize("seed", range(30))
def test_a_survey_in_two_halves_is_the_survey_of_one_walk(seed):
    """Two threads survey a plain file, the second half from a guess (outside any quotes) mended against the first
    half's end: the same marks and counts as one walk of the whole file, whether the guess held or not."""
    body, grammar, *_ = _survey_cases(seed)
    for window in (23, 61, 199):
        one = split.survey(body, "none", grammar, window=window, keep=1000)
        two = split.survey_in_two(body, grammar, window=window, keep=1000)
        assert two == one, window


def test_a_survey_in_two_mends_a_guess_that_starts_inside_a_quoted_field():
    """The second half begins inside a quoted field that spans several windows: the guess is wrong and mended."""
    rows = ["a,b"] + [f'{k},"{"x" * 5}"' for k in range(40)]
    rows[20] = '20,"' + "y\n" * 60 + '"'  # a quoted field of 120 bytes, many windows of 16
    body = ("\n".join(rows) + "\n").encode()
    one = split.survey(body, "none", split.CSV, window=16, keep=1000)
    assert split.survey_in_two(body, split.CSV, window=16, keep=1000) == one
    mid = len(body) // 16 // 2 * 16
    assert body.index(b'20,"') < mid < body.index(b'20,"') + 120  # the halves meet inside that field
