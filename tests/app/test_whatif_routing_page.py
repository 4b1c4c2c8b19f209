"""AppTest: routing= on the What-if page gives each replica its own prefix cache, read from the uploaded log itself,
through the same call as `ttft-planner whatif` (planner.whatif.routing.with_prefix_identity): the page's fully-cached
count for the 3-session trace is the command's (issue 45)."""

import json

from click.testing import CliRunner

from planner.cli import cli
from tests.app.conftest import open_page

ROUND_ROBIN = "dedicated:name=rr,replicas=2,slots=4,prefill=12000,decode=60,usd_per_gpu_h=3.2,routing=round-robin"


def _three_sessions() -> bytes:
    """Three sessions taking turns, six turns each, each resending its 2,048-token prompt (four 512-token hashes), a
    minute apart (tests/planner/whatif/test_whatif_routing.py's trace)."""
    rows = []
    for _turn in range(6):
        for session, base in {"alpha": 100, "beta": 200, "gamma": 300}.items():
            rows.append(
                {
                    "timestamp": len(rows) * 60_000,
                    "session_id": session,
                    "input_length": 2048,
                    "output_length": 20,
                    "hash_ids": [base, base + 1, base + 2, base + 3],
                }
            )
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def test_the_pages_fully_cached_count_is_the_commands(app, tmp_path):
    data = _three_sessions()
    (tmp_path / "sessions.jsonl").write_bytes(data)
    got = CliRunner().invoke(
        cli, ["whatif", "--log", str(tmp_path / "sessions.jsonl"), "--deployment", ROUND_ROBIN, "--json"]
    )
    assert got.exit_code == 0, got.output
    cache = json.loads(got.stdout)["candidates"][0]["prefix_cache"]
    assert (cache["fully_cached"], cache["requests"]) == (12, 18)  # round-robin splits each session over 2 replicas
    open_page("whatif", app)
    app.file_uploader(key="wi_files").set_value([("sessions.jsonl", data, "application/jsonl")])
    app.text_area(key="wi_specs").set_value(ROUND_ROBIN).run()
    assert not app.exception, app.exception
    said = [c.value for c in app.caption if c.value.startswith("**rr**: round-robin routing")]
    assert said == [
        "**rr**: round-robin routing over 2 replicas, each with its own prefix cache (tail-first): hit rate "
        f"{cache['hit_rate']:.1%}, {cache['fully_cached']}/18 prompts fully cached."
    ], [c.value for c in app.caption]


def test_a_stored_log_says_its_replicas_take_the_logs_cached_tokens(app):
    from tests.app.test_whatif import _replay_stored_log

    _replay_stored_log(app, ROUND_ROBIN)
    assert not app.exception, app.exception
    assert any("routing=: this log keeps token counts" in c.value for c in app.caption)
    assert any(c.value.startswith("**rr**: round-robin routing over 2 replicas") for c in app.caption)
