"""CSV as the world writes it: each quirk is its own file in csv_quirks/, and every one reads as the same requests."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from planner.logs import read_logs

QUIRKS = Path(__file__).resolve().parent / "csv_quirks"
SAMPLES = Path(__file__).resolve().parents[3] / "assets" / "sample_logs"

# The five requests every quirk file holds (see the files themselves).
MODELS = ["gpt-4.1", "gpt-4.1", "claude, sonnet", 'the "big" one', "gpt-4.1"]
PROMPT = [1200, 2300, 900, 15000, 40]
CACHED = [800, 0, 512, 14000, 0]
OUTPUT = [40, 12, 7, 300, 1]
FIRST_MS = int(dt.datetime(2026, 11, 20, 9, 0, tzinfo=dt.UTC).timestamp() * 1000)


@pytest.mark.parametrize(
    "name",
    [
        "quoted_delimiters_and_doubled_quotes.csv",
        "quoted_line_breaks.csv",
        "utf8_bom.csv",
        "crlf.csv",
        "semicolons.csv",
        "tabs.tsv",
        "pipes.csv",
        "header_spaces_and_capitals.csv",
    ],
)
def test_each_quirk_reads_every_request_exactly(name):
    res = read_logs([QUIRKS / name])
    f = res.frame
    assert res.n_rejected == 0, res.rejected
    assert f["model"].tolist() == MODELS
    assert f["prompt_tokens"].tolist() == PROMPT
    assert f["cached_tokens"].tolist() == CACHED
    assert f["output_tokens"].tolist() == OUTPUT
    assert int(f["ts_ms"].iloc[0]) == FIRST_MS


def test_rejected_rows_are_named_by_the_line_they_start_on():
    res = read_logs([QUIRKS / "rejects_after_quoted_line_breaks.csv"])
    assert len(res.frame) == 2
    got = {r.line_no: r.reason for r in res.rejected}
    # Row 1's note spans lines 2-4, so the negative row starts on line 5 and the one with an extra field on 6.
    assert set(got) == {5, 6}
    assert "negative" in got[5] and "has 6 fields, the header has 5" in got[6]


def test_litellm_export_with_quoted_json_metadata_and_a_multi_line_field():
    res = read_logs([SAMPLES / "litellm_spend_logs.csv"])
    assert res.formats == {"litellm_spend_logs.csv": "litellm"} and res.n_rejected == 0
    f = res.frame
    assert len(f) == 120
    # The cached tokens come out of the quoted JSON metadata column; TTFT from completionStartTime.
    assert int(f["cached_tokens"].sum()) > 0 and (f["cached_tokens"] <= f["prompt_tokens"]).all()
    assert f["ttft_ms"].notna().all() and (f["ttft_ms"] > 0).all()


def test_invalid_utf8_rejects_only_its_row():
    data = (
        b"timestamp,model,prompt_tokens\n2026-11-20T09:00:00Z,m,10\n"
        + b"2026-11-20T09:00:01Z,mod\xe8le,10\n"
        + b"2026-11-20T09:00:02Z,m,10\n"
    )
    res = read_logs([("latin.csv", data)])
    assert len(res.frame) == 2
    assert [(r.line_no, "UTF-8" in r.reason) for r in res.rejected] == [(3, True)]
