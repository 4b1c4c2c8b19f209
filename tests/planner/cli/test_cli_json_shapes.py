"""Every read command's `--json`, run for real, prints the one shape it declares (planner/cli/_output.py): JSON Lines
always; OBJECT one line, LIST one line per record (none when there is none), STREAM one line per item then a
summary. The store is the demo store a team has after a few days (tests/support/demo_store.py), a local simulator
answers the probes and a local HTTP target the RTT probe."""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner

from planner.cli import cli
from planner.cli._output import JsonOption, Shape
from planner.simulator import SimulatorConfig
from planner.simulator.runner import running_simulator
from planner.store import open_store
from tests.support.cli_tree import BASE_ARGS, SLS, leaf_commands, write_tiny_log
from tests.support.demo_store import seed_demo
from tests.support.rtt_target import serve_in_thread
from tests.support.store_template import migrated_sqlite

#: Read command → the arguments of a run that answers here ({db}, {log}, {tmp}, {sim}, {rtt} filled in).
RUNS: dict[str, list[str]] = {
    **{path: args for path, args in BASE_ARGS.items() if path.startswith("capacity ")},
    "budget": BASE_ARGS["budget"],
    "prefix": BASE_ARGS["prefix"],
    "whatif": ["--log", "{log}", "--deployment", SLS],
    "logs summarize": ["{log}"],
    "logs import": ["{log}", "--name", "contract", "--database-url", "{db}"],
    "logs list": ["--database-url", "{db}"],
    "endpoints list": ["--database-url", "{db}"],
    "endpoints catalog": [],
    "endpoints import": ["{tmp}/endpoints.toml", "--database-url", "{db}"],
    "alerts list": ["--database-url", "{db}"],
    "alerts evaluate": ["--database-url", "{db}"],
    "alerts history": ["--database-url", "{db}"],
    "alerts test": ["hook", "--database-url", "{db}"],  # its webhook refuses the connection: one line, exit 1
    "regions list": ["--database-url", "{db}"],
    "sources list": ["--database-url", "{db}"],
    "sources hours": ["agents", "--database-url", "{db}"],
    "worksheets list": ["--database-url", "{db}"],
    "report": ["--endpoints", "acme-eu,beta-us", "--out", "{tmp}/r.html", "--database-url", "{db}"],
    "cold-reading": ["acme-eu", "--no-wait", "--database-url", "{db}"],
    "rtt": ["--url", "{rtt}/ping", "-n", "2"],
    "probe": ["--base-url", "{sim}", "--model", "sim-model", "-n", "2", "--interval-s", "0", "--prompt-tokens", "50"],
    "sweep": ["--base-url", "{sim}", "--model", "sim-model", "--concurrency", "1,2", "--step-duration-s", "0.2"],
}
#: Read commands whose run needs a live source or minutes of measuring, and the tests that read their --json.
ELSEWHERE = {
    "calibrate": "tests/planner/whatif/test_whatif_calibrate.py (a calibration takes rounds of measuring)",
    "sources test": "tests/planner/sources/test_sources_litellm.py, _prometheus.py (a live PostgreSQL or Prometheus)",
    "sources sync": "tests/planner/sources/test_sources_litellm.py, _prometheus.py (a live PostgreSQL or Prometheus)",
    "sources prometheus": "tests/planner/sources/test_sources_prometheus.py (a live Prometheus)",
}
#: Commands whose exit code is not 0 in the run above, and why.
EXIT_CODE = {"alerts test": 1}


def _shape(command) -> Shape:
    return next(p.shape for p in command.params if isinstance(p, JsonOption))


READS = {path: cmd for path, cmd in leaf_commands() if any(isinstance(p, JsonOption) for p in cmd.params)}


def test_every_read_command_is_run_here_or_named_with_where_it_is():
    assert set(RUNS) | set(ELSEWHERE) == set(READS)
    assert not set(RUNS) & set(ELSEWHERE)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("shapes")
    db = migrated_sqlite(tmp / "planner.db")
    engine = open_store(db)
    seed_demo(engine, int(time.time() * 1000))
    engine.dispose()
    (tmp / "endpoints.toml").write_text(
        '[[endpoint]]\nname = "imp-a"\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
        '[[endpoint]]\nname = "imp-b"\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
    )
    log = write_tiny_log(tmp / "log.jsonl")
    added = CliRunner().invoke(
        cli, ["alerts", "add", "hook", "--threshold", "500", "--webhook-env", "CONTRACT_HOOK", "--database-url", db]
    )
    assert added.exit_code == 0, added.output
    target = serve_in_thread()
    fast = SimulatorConfig(prefill_tokens_per_s=200_000, decode_tokens_per_s=20_000)
    with running_simulator(fast) as sim:
        yield {"db": db, "log": str(log), "tmp": str(tmp), "sim": sim, "rtt": target.base_url}
    target.stop()


@pytest.mark.parametrize("path", sorted(RUNS))
def test_json_output_is_the_declared_shape(path, env, monkeypatch):
    monkeypatch.setenv("CONTRACT_HOOK", "http://127.0.0.1:9/hook")
    res = CliRunner().invoke(cli, [*path.split(), *(a.format(**env) for a in RUNS[path]), "--json"])
    assert res.exit_code == EXIT_CODE.get(path, 0), (res.output[-800:], res.exception)
    lines = [json.loads(line) for line in res.stdout.splitlines()]  # every line is JSON …
    assert all(isinstance(line, dict) for line in lines), res.stdout[:400]  # … and an object
    shape = _shape(READS[path])
    if shape is Shape.OBJECT:
        assert len(lines) == 1, res.stdout[:400]
    elif shape is Shape.LIST:
        assert lines, f"{path}: the demo store holds records to list"
        assert len({frozenset(line) for line in lines}) == 1, "one kind of record, the same fields on every line"
    else:
        item = next(p.item for p in READS[path].params if isinstance(p, JsonOption))
        assert [line["type"] for line in lines] == [item] * (len(lines) - 1) + ["summary"], res.stdout[:400]
        assert len(lines) >= 3


def test_an_empty_list_prints_no_line(sqlite_store_url):
    """An empty store: every list command prints nothing (not `[]`, not `{"uploads": []}`) and exits 0."""
    for path in ("logs list", "endpoints list", "alerts list", "alerts history", "sources list", "worksheets list"):
        res = CliRunner().invoke(cli, [*path.split(), "--json", "--database-url", sqlite_store_url])
        assert (res.exit_code, res.stdout) == (0, ""), (path, res.output)
