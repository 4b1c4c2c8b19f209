"""`ttft-planner budget`: same numbers as the page, exit 2 on usage errors.

Commands run in-process (click's runner: the same code, exit status, stdout and stderr); one test runs the installed
console script, the entry point users type."""

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.cli import cli

EXE = str(Path(sys.executable).with_name("ttft-planner"))


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def run(*args: str) -> Ran:
    res = CliRunner().invoke(cli, list(args), prog_name="ttft-planner")
    return Ran(res.exit_code, res.stdout, res.stderr)


def test_budget_json_matches_the_worksheet_arithmetic():
    out = run(
        "budget",
        "--target-ms",
        "500",
        "--queue-ms",
        "60",
        "--cold-ms",
        "0",
        "--network-ms",
        "80",
        "--prefill-tokens-per-s",
        "12000",
        "--prompt-tokens-p95",
        "4000",
        "--cache-hit",
        "0.5",
        "--json",
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["prefill_budget_ms"] == 360
    assert data["verdict"] == "ok"
    assert data["prefill_needed_ms"] == pytest.approx(166.667, abs=0.01)
    assert data["max_prompt_tokens_p95"] == pytest.approx(8640)


def test_budget_text_names_the_culprit_when_negative():
    out = run("budget", "--target-ms", "200", "--queue-ms", "30", "--network-ms", "250")
    assert out.returncode == 0
    assert "prefill budget" in out.stdout and "-80 ms" in out.stdout
    assert "no model choice can fix this" in out.stdout


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--target-ms", "-5"], "--target-ms"),
        (["--target-ms", "abc"], "--target-ms"),
        (["--target-ms", "500", "--prefill-tokens-per-s", "0", "--prompt-tokens-p95", "10"], "--prefill-tokens-per-s"),
        (["--target-ms", "500", "--prefill-tokens-per-s", "1000"], "together"),
        (["--target-ms", "500", "--cache-hit", "2"], "--cache-hit"),
    ],
)
def test_usage_errors_exit_2_with_the_flag_named(args, fragment):
    out = run("budget", *args)
    assert out.returncode == 2
    assert fragment in out.stderr


def test_help_documents_every_command():
    import click
    from click.testing import CliRunner

    from planner.cli import cli

    out = subprocess.run([EXE, "--help"], capture_output=True, text=True, timeout=120)  # the installed script
    assert out.returncode == 0 and "budget" in out.stdout
    runner = CliRunner()
    ctx = click.Context(cli)
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        assert name in out.stdout
        sub = runner.invoke(cli, [name, "--help"])
        assert sub.exit_code == 0, f"{name} --help failed: {sub.output}"
        assert command.help, f"{name} has no help text"


def test_worksheets_export_prints_what_the_page_saved(tmp_path):
    from planner.store import open_store
    from planner.store.worksheets import save_worksheet
    from planner.worksheet.budget import Worksheet

    url = f"sqlite:///{tmp_path / 'p.db'}"
    eng = open_store(url)
    save_worksheet(eng, Worksheet(name="Oregon"))
    eng.dispose()
    listed = run("worksheets", "list", "--database-url", url)
    assert "Oregon" in listed.stdout
    md = run("worksheets", "export", "Oregon", "--database-url", url)
    assert (
        md.returncode == 0
        and "# TTFT worksheet: Oregon" in md.stdout
        and "| **Prefill budget (what remains)** | **360** |" in md.stdout
    )
    js = json.loads(run("worksheets", "export", "Oregon", "--format", "json", "--database-url", url).stdout)
    assert js["result"]["prefill_budget_ms"] == 360 and js["worksheet"]["queue_ms"]["source"] == "typed"
    missing = run("worksheets", "export", "Nope", "--database-url", url)
    assert missing.returncode == 2 and "no worksheet named 'Nope'" in missing.stderr
