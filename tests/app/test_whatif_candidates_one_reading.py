"""A deployment described in words is read one way (planner.whatif.candidates.parse_candidates): the What-if page's
box and `ttft-planner whatif --deployment` refuse the same candidates with the same sentences.

Before, each front had its own loop: the page said "Candidate names must differ (add name=… to a line): a, a" and the
command "candidate names must differ, got a, a"."""

from __future__ import annotations

from click.testing import CliRunner

from planner.cli import cli
from tests.app.test_whatif import CHEAP, _replay_stored_log

TWIN = CHEAP.replace("name=sls", "name=twin")
BAD_SLOTS = "serverless:window=300,cold=20,slots=eight,max=1,prefill=1,decode=1"


def _command_error(tmp_path, specs: list[str]) -> str:
    log = tmp_path / "log.jsonl"
    log.write_text("")
    args = ["whatif", "--log", str(log)]
    for spec in specs:
        args += ["--deployment", spec]
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 2, r.output
    return " ".join(r.output.split())  # click may wrap a long line


def test_the_page_and_the_command_refuse_the_same_candidates_in_the_same_words(app, tmp_path):
    _replay_stored_log(app, f"{TWIN}\n{TWIN}\n{BAD_SLOTS}")
    on_page = [e.value for e in app.error]
    assert on_page == [
        f"deployment '{BAD_SLOTS}': slots must be a whole number, got 'eight'",
        "Candidate names must differ (add name=… to a spec): twin, twin",
    ], on_page
    said = _command_error(tmp_path, [TWIN, TWIN, BAD_SLOTS])
    assert all(sentence in said for sentence in on_page), said
