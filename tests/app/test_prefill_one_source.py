"""AppTest: the Prefill tab's p95 prompt and cache-hit rate come from one source, said on the tab: a log that records
cached tokens gives both; a log without a cache column leaves the cache-hit rate unknown — the worksheet's pair stays,
marked as such, never "0.00 from the log"."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from planner.logs import COLUMNS, LogParseResult
from planner.percentiles import percentile
from planner.store import database_url, open_store
from planner.store.logs import save_upload
from tests.app.conftest import open_page

T0 = 1_780_000_000_000


def _store(name: str, cached: int) -> tuple[int, list[int]]:
    prompts = [1000 + 100 * i for i in range(40)]
    n = len(prompts)
    frame = pd.DataFrame(
        {
            "ts_ms": np.array([T0 + i * 60_000 for i in range(n)], dtype=np.int64),
            "model": ["m"] * n,
            "prompt_tokens": prompts,
            "cached_tokens": [cached] * n,  # 0 everywhere: what a log without a cache column reads as
            "output_tokens": [20] * n,
            "ttft_ms": [np.nan] * n,
            "duration_ms": [np.nan] * n,
            "source": ["t"] * n,
        }
    )[list(COLUMNS)]
    eng = open_store(database_url())
    upload_id = save_upload(eng, name, LogParseResult(requests=frame))
    eng.dispose()
    return upload_id, prompts


def _caption(app) -> str:
    return next(c.value for c in app.caption if "p95 prompt and cache-hit rate from" in c.value)


def test_a_log_without_cached_tokens_keeps_the_worksheets_pair_and_says_why(app):
    upload_id, _ = _store("nocache.jsonl", cached=0)
    open_page("capacity", app)
    app.selectbox(key="cap_traffic").set_value(upload_id).run()
    assert not app.exception, app.exception
    # the worksheet's defaults: a 4,000-token p95 prompt, half of it cached
    assert app.number_input(key=f"cap_pf_hit_{upload_id}").value == 0.5
    assert app.number_input(key=f"cap_pf_prompt_{upload_id}").value == 4000
    caption = _caption(app)
    assert "from your worksheet" in caption and "records no cached prompt tokens" in caption
    assert "unknown, not 0" in caption
    assert any("cache-hit rate unknown" in c.value for c in app.caption)  # the page's summary of the log


def test_a_log_with_cached_tokens_gives_both_figures(app):
    upload_id, prompts = _store("cached.jsonl", cached=500)
    open_page("capacity", app)
    app.selectbox(key="cap_traffic").set_value(upload_id).run()
    assert not app.exception, app.exception
    assert app.number_input(key=f"cap_pf_prompt_{upload_id}").value == percentile(prompts, 0.95).value
    assert app.number_input(key=f"cap_pf_hit_{upload_id}").value == pytest.approx(500 * 40 / sum(prompts))
    assert "from the log cached.jsonl" in _caption(app)
