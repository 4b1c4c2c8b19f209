"""planner.logs.tables: a CSV and a Parquet file are refused by one column check under a mapping, in the same words
(but where the columns live: a CSV's header, a Parquet file)."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from planner.logs import LogFormatError, read_logs
from planner.logs.context import MAP_HINT_PAGE

GOOD = pd.DataFrame({"timestamp": ["2025-01-01T00:00:00Z", "2025-01-01T00:01:00Z"], "prompt_tokens": [10, 20]})


def _csv(df: pd.DataFrame) -> bytes:
    return df.to_csv(index=False).encode()


def _parquet(df: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return buf.getvalue()


def _whole_file_reasons(sources, **kw) -> list[str]:
    with pytest.raises(LogFormatError) as info:
        read_logs(sources, **kw)
    return [r.reason for r in info.value.rejected if r.line_no == 0]


@pytest.mark.parametrize(("write", "ext", "where"), [(_csv, "csv", "the header"), (_parquet, "parquet", "the file")])
def test_a_mapped_column_the_table_lacks_is_named(write, ext, where):
    mapping = {"ts": "timestamp", "prompt_tokens": "input_tokens"}
    reasons = _whole_file_reasons([(f"log.{ext}", write(GOOD))], mapping=mapping)
    assert reasons == [f"mapped column(s) not in {where}: input_tokens"]


@pytest.mark.parametrize(("write", "ext"), [(_csv, "csv"), (_parquet, "parquet")])
def test_no_time_column_is_the_same_sentence_for_both(write, ext):
    df = pd.DataFrame({"when": ["x", "y"], "size": [1, 2]})
    reasons = _whole_file_reasons([(f"log.{ext}", write(df))], map_hint=MAP_HINT_PAGE)
    assert len(reasons) == 1
    assert reasons[0].startswith("no time column") and "(when, size)" in reasons[0]
    assert reasons[0].endswith(MAP_HINT_PAGE)


@pytest.mark.parametrize(("write", "ext", "fmt"), [(_csv, "csv", "csv"), (_parquet, "parquet", "parquet")])
def test_a_readable_table_keeps_its_mapping_and_format(write, ext, fmt):
    res = read_logs([(f"log.{ext}", write(GOOD))])
    assert len(res.frame) == 2 and res.formats == {f"log.{ext}": fmt}
    assert res.mapping["ts"] == "timestamp" and res.mapping["prompt_tokens"] == "prompt_tokens"
