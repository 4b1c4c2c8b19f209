"""One mark for a percentile resting on too few samples: the same sweep step, printed by `ttft-planner sweep` and shown
by the Load sweep page, reads the same ("105 ms (too few)"), both drawn by planner.present.

The step is measured once, over real HTTP against the built-in simulator, by the command (stored with --store), and
the page reads that stored run: only what a loaded machine cannot change is asserted (two requests are two, whatever
their times)."""

from __future__ import annotations

import os

from click.testing import CliRunner

from planner import present
from planner.cli import cli
from planner.simulator import SimulatorConfig, running_simulator
from tests.app.conftest import open_page, shown_table

# 400 prompt tokens at 4,000 tokens/s: 100 ms of prefill per request.
SERVICE = dict(prefill_tokens_per_s=4000, decode_tokens_per_s=1000, base_overhead_ms=0, prefix_cache_tokens=0, seed=0)


def test_a_thin_percentile_reads_the_same_on_the_page_and_in_the_command():
    url = f"sqlite:///{os.environ['TTFT_PLANNER_DATA_DIR']}/planner.db"
    with running_simulator(SimulatorConfig(slots=4, **SERVICE)) as base_url:
        # constant arrivals at 4/s for 0.5 s: exactly two requests, enough for a p50 (2), not for a p95 (20)
        r = CliRunner().invoke(
            cli,
            [
                *("sweep", "--base-url", base_url, "--model", "m", "--prompt-tokens", "400", "--max-tokens", "2"),
                *("--rates", "4", "--arrivals", "constant", "--step-duration-s", "0.5"),
                *("--store", "--database-url", url, "--vantage", "ci"),
            ],
            catch_exceptions=False,
        )
    assert r.exit_code == 0, r.output
    at = open_page("sweep")
    assert not at.exception, at.exception
    row = shown_table(at).set_index("Load").loc["4"]
    assert row["Successful samples"] == "2"
    p95_cell, p50_cell = row["TTFT p95 (ms)"], row["TTFT p50 (ms)"]
    assert p95_cell.endswith(" ms (too few)") and present.TOO_FEW not in p50_cell
    step_line = next(line for line in r.output.splitlines() if "TTFT p50" in line)
    assert f"p95 {p95_cell} ·" in step_line, (p95_cell, step_line)  # the same figure, the same mark
    assert f" {p50_cell} · p95" in step_line, (p50_cell, step_line)
    assert "*" not in step_line
