"""AppTest: the Logs page shows the summary `logs summarize` prints (one function, planner.logs.summarize), and the
edges a new user met in issue 43: a working day with no request, a log with no cache column, a log shorter than an
hour, the upload limit, and an upload not yet saved on the other pages."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from click.testing import CliRunner
from streamlit.testing.v1 import AppTest

from planner.cli import cli
from tests.app.conftest import open_page
from tests.support.log_summary_reference import same
from tests.support.short_trace import BUSIEST_HOUR_REQUESTS, SPAN_MIN, short_trace_csv

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "assets" / "sample_logs"


def _upload(at: AppTest, name: str, data: bytes) -> AppTest:
    at.file_uploader(key="logs_files").set_value([(name, data, "application/octet-stream")])
    at.run()
    assert not at.exception, at.exception
    return at


def _table(at: AppTest, column: str):
    """The first dataframe on the page with `column` (its values as the page hands them to the grid)."""
    return next(d.value for d in at.dataframe if column in d.value.columns)


def test_the_page_and_logs_summarize_json_give_the_same_figures():
    """One summary: the page's figures for a sample are the command's, every one, and the headline shows them."""
    path = SAMPLES / "openai_chat_completions.jsonl"
    r = CliRunner().invoke(cli, ["logs", "summarize", str(path), "--json"])
    assert r.exit_code == 0, r.output
    command = json.loads(r.stdout)
    at = _upload(open_page("logs"), path.name, path.read_bytes())
    page = at.session_state["logs_summary"].to_dict()
    same(page, {k: command[k] for k in page}, "page vs logs summarize --json")
    assert at.metric[0].value == f"{command['prompt_tokens_workday']['p95']['value']:,.0f}"
    assert at.metric[1].value == f"{command['prompt_tokens_workday']['p50']['value']:,.0f}"
    assert at.metric[2].value == f"{command['cached_share']['token_fraction'] * 100:.0f}%"
    assert at.metric[3].value == f"{command['peak_hour_requests']:,} requests"
    models = _table(at, "Cached share of prompt tokens")
    assert list(models["Samples (n)"]) == [f"{m['n']:,}" for m in command["models"]]


def test_a_working_day_with_no_request_shows_dashes_and_says_why():
    """Issue 43: the working-day rows of the percentile table read "None"."""
    at = _upload(open_page("logs"), "night.csv", short_trace_csv())
    rows = _table(at, "percentile")
    workday = rows[rows["what"].str.startswith("prompt tokens, working day")]
    assert len(workday) == 5 and set(workday["value"]) == {"—"}
    assert set(workday["what"]) == {"prompt tokens, working day (no request in the working day)"}
    whole = rows[rows["what"] == "prompt tokens, all"]
    assert all(re.fullmatch(r"[\d,]+", v) for v in whole["value"])  # counts as the grid shows them


def test_a_log_without_cached_tokens_shows_a_dash_per_model_as_in_the_headline():
    """Issue 43: "Cached share 0.0 %" per model while the headline said "—"."""
    at = _upload(open_page("logs"), "night.csv", short_trace_csv())
    assert at.metric[2].value == "—"
    models = _table(at, "Cached share of prompt tokens")
    assert list(models["Cached share of prompt tokens"]) == ["—"]


def test_the_busiest_clock_hour_is_counted_and_a_log_shorter_than_an_hour_says_so():
    """Issue 43: "Peak-hour arrival rate" showed the whole-log mean of a 57-minute trace as its busiest clock hour."""
    at = _upload(open_page("logs"), "short.csv", short_trace_csv())
    busiest = at.metric[3]
    assert busiest.label == "Busiest clock hour"
    assert busiest.value == f"{BUSIEST_HOUR_REQUESTS:,} requests"
    words = f"18:00–19:00 UTC: {BUSIEST_HOUR_REQUESTS:,} requests (the log spans {SPAN_MIN} min, less than an hour)"
    assert any(words in c.value for c in at.caption)
    assert words in busiest.proto.help and "Mean over the whole log" in busiest.proto.help


def test_the_uploader_states_the_configured_upload_limit_and_the_readme_the_same():
    """Issue 43: the uploader said "1GB per file" while the README and the config said 512 MB. One figure: the
    config's, which the uploader writes as it is (tests/e2e checks the browser's text)."""
    config = tomllib.loads((ROOT / "app" / ".streamlit" / "config.toml").read_text())
    limit_mb = config["server"]["maxUploadSize"]
    assert limit_mb <= 500  # above 500 the uploader writes it as "1GB"
    at = open_page("logs")
    assert f"Up to {limit_mb:,} MB per file" in at.file_uploader(key="logs_files").help
    readme = (ROOT / "docs" / "pages" / "logs.md").read_text()  # the Logs page's manual (was the README's)
    assert f"an upload at {limit_mb} MB" in readme and f"under the page's {limit_mb} MB upload limit" in readme
    other = rf"\b(?!{limit_mb}\b)\d+ MB upload limit|an upload at (?!{limit_mb}\b)\d+ MB"
    assert not re.search(other, readme)  # no second figure


def test_a_log_read_but_not_saved_is_offered_to_capacity_and_whatif():
    """Issue 43: Capacity & cost said "No request log uploaded yet" for an upload read on the Logs page and not
    saved. It is offered there and on What-if, the same requests, nothing stored."""
    path = SAMPLES / "openai_chat_completions.jsonl"
    at = _upload(open_page("logs"), "agent.jsonl", path.read_bytes())
    label = "read on the Logs page: agent.jsonl (400 requests, not saved)"
    open_page("capacity", at)
    assert not any("No request log uploaded yet" in c.value for c in at.caption)
    picker = at.selectbox(key="cap_traffic")
    assert label in picker.options and picker.value == "session-log"
    assert any(
        c.value.startswith("From the log read on the Logs page, agent.jsonl (not saved): 400 requests")
        for c in at.caption
    )
    open_page("whatif", at)
    whatif = at.selectbox(key="wi_source")
    assert label in whatif.options
    whatif.set_value(("session", at.session_state["session_log"].serial)).run()
    assert not at.exception, at.exception
    assert any("400 requests from agent.jsonl" in c.value for c in at.caption)
    assert not at.error, [e.value for e in at.error]
    # cleared on the Logs page: no longer offered
    open_page("logs", at)
    at.file_uploader(key="logs_files").set_value(None).run()
    at.button(key="logs_clear").click().run()
    open_page("capacity", at)
    assert label not in at.selectbox(key="cap_traffic").options
    assert any("No request log uploaded yet" in c.value for c in at.caption)
