"""The README documents every setting and every command (datasette's and sqlite-utils' documentation tests)."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from planner.cli import cli
from planner.settings import SETTINGS, Setting

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _row(first_cell: str) -> str | None:
    """The README table row whose first cell is exactly `first_cell` (with backticks), or None."""
    for line in README.splitlines():
        if line.startswith(f"| {first_cell} |"):
            return line
    return None


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.name)
def test_settings_are_documented(setting: Setting) -> None:
    row = _row(f"`{setting.name}`")
    assert row is not None, f"README.md has no settings-table row for {setting.name}"
    assert setting.default in row.replace("`", ""), f"README.md's row for {setting.name} lacks its default"


def test_every_variable_the_code_reads_is_a_setting() -> None:
    names = {s.name for s in SETTINGS}
    pattern = re.compile(r"TTFT_PLANNER_[A-Z0-9_]*[A-Z0-9]")
    found: dict[str, str] = {}
    for folder in ("planner", "app", "tests", "bench", "scripts"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in {".py", ".sh"}:
                for name in pattern.findall(path.read_text(encoding="utf-8")):
                    found.setdefault(name, str(path.relative_to(ROOT)))
    assert found, "no TTFT_PLANNER_ variable found: the scan is broken"
    missing = {name: where for name, where in found.items() if name not in names}
    assert not missing, f"not in planner/settings.py (so not in the README's table): {missing}"


def _commands(group: click.Group, prefix: str):
    ctx = click.Context(group)
    for name in sorted(group.list_commands(ctx)):
        command = group.get_command(ctx, name)  # loads a lazily registered command
        if command is None or command.hidden:
            continue
        yield f"{prefix} {name}", prefix, name
        if isinstance(command, click.Group):
            yield from _commands(command, f"{prefix} {name}")


COMMANDS = list(_commands(cli, "ttft-planner"))


def test_the_walk_finds_nested_commands() -> None:
    assert any(path.count(" ") == 2 for path, _, _ in COMMANDS), "no subcommand found: the walk is broken"


@pytest.mark.parametrize(("path", "parent", "name"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_commands_are_documented(path: str, parent: str, name: str) -> None:
    """A command is documented by `ttft-planner … NAME` anywhere, or a subcommand by `NAME` in its group's row."""
    if re.search(rf"`{re.escape(path)}(?![\w-])", README):
        return
    group_row = _row(f"`{parent}`") if parent != "ttft-planner" else None
    assert group_row is not None and f"`{name}`" in group_row, f"README.md does not mention `{path}`"
