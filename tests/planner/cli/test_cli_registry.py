"""The command registry (planner/cli/__init__.py): explicit, lazy, and true to each command's own help."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import click
from click.testing import CliRunner

import planner.cli as cli_pkg
from planner.cli import REGISTRY, cli

ROOT = Path(__file__).resolve().parents[3]


def _root_help(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_root_help_lists_every_command_with_the_line_click_would_print_from_its_own_help():
    lazy = _root_help("import sys; sys.argv = ['ttft-planner', '--help']\nfrom planner.cli import main; main()")
    # The same page with every command imported and laid out by click itself (no registry summaries).
    eager = click.Group(name="ttft-planner", help=cli.help, context_settings=cli.context_settings, params=cli.params)
    ctx = click.Context(cli)
    for name in cli.list_commands(ctx):
        eager.add_command(cli.get_command(ctx, name), name)
    expected = eager.get_help(click.Context(eager, info_name="ttft-planner", max_content_width=100))
    assert lazy.split("Commands:")[1] == expected.split("Commands:")[1] + "\n"


def test_root_help_imports_no_command_module():
    loaded = _root_help(
        "import contextlib, io, sys; sys.argv = ['ttft-planner', '--help']\n"
        "from planner.cli import main\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()): main()\n"
        "print('\\n'.join(sorted(sys.modules)))"
    ).split()
    assert not {e.module for e in REGISTRY.values()} & set(loaded)
    assert "pandas" not in loaded and "httpx" not in loaded


def test_every_commands_list_of_a_cli_module_is_registered_under_its_own_name():
    ctx = click.Context(cli)
    for info in pkgutil.iter_modules(cli_pkg.__path__):
        if info.name.startswith("_"):
            continue
        for command in getattr(importlib.import_module(f"planner.cli.{info.name}"), "COMMANDS", ()):
            assert cli.get_command(ctx, command.name) is command, f"{info.name}.{command.name} is not in REGISTRY"


def test_an_unknown_command_is_a_usage_error_naming_it():
    result = CliRunner().invoke(cli, ["probes"])
    assert result.exit_code == 2 and "No such command 'probes'" in result.output
