"""Write docs/cli.md, the command-line reference, from the click tree's own --help.

    python scripts/gen_cli_reference.py           # rewrite docs/cli.md
    python scripts/gen_cli_reference.py --check   # exit 1 when docs/cli.md differs from --help

A script rather than the mkdocs-click plugin: the page is then plain Markdown in the repository (read on GitHub as on
the site, diffed in review), the docs build needs no plugin importing the CLI, and
tests/planner/cli/test_cli_reference.py regenerates it and compares, so it cannot drift from --help. The help is laid
out at a fixed width (100 columns) whatever the terminal, so the page is the same on every machine.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as `python scripts/gen_cli_reference.py` from anywhere
    sys.path.insert(0, str(ROOT))

from planner.cli import cli  # noqa: E402 - after the path is set
from planner.cli._output import JsonOption, no_json_reason  # noqa: E402
from planner.cli._renamed import REMOVED_IN, RENAMED_COMMANDS, RenamedOption  # noqa: E402

__all__ = ["PAGE", "render"]

PAGE = ROOT / "docs" / "cli.md"
WIDTH = 100  # columns: the root group's max_content_width

_INTRO = """\
# Command-line reference

<!-- Generated from `ttft-planner --help` by scripts/gen_cli_reference.py: edit the commands' help, then run
`python scripts/gen_cli_reference.py`. tests/planner/cli/test_cli_reference.py fails when this page and --help differ.
-->

`ttft-planner` is the command line over the same library the dashboard uses; each section below is a command's own
`--help`. Numbers carry their unit in the option's name (`--timeout-s`, `--target-p95-ms`); a usage error (a bad flag,
a value out of range) exits 2 with one line naming the option, a runtime failure exits 1.
"""

_JSON = """\
## JSON output

Every command that reads or reports something takes `--json`. Its output is always
[JSON Lines](https://jsonlines.org/): one JSON object per line on stdout, nothing else there (notes, progress and
errors go to stderr; a number that is not finite is `null`). Each command prints one of three shapes:

- **one object**: a single result, on one line;
- **one object per record**: a list, one line per record in the order the text output shows them, and no line at
  all when there is none;
- **a stream, then a summary**: one line per item as it is measured, each with `"type"` naming the item, then one
  line with `"type": "summary"`.

Read any of them line by line, `json.loads` each line; `jq -s .` turns them into one array. The commands without
`--json` are the servers (they run until stopped), the changes that answer with one line confirming them, and the
exports that print a document in their own format.
"""


def _commands() -> list[tuple[str, click.Command, click.Context]]:
    """(path, command, its context) for the root and every command below it, depth first, sorted by name."""
    out = []

    def walk(cmd: click.Command, ctx: click.Context, path: str) -> None:
        out.append((path, cmd, ctx))
        if isinstance(cmd, click.Group):
            for name in sorted(cmd.list_commands(ctx)):
                sub = cmd.get_command(ctx, name)
                assert sub is not None, name
                walk(sub, click.Context(sub, info_name=name, parent=ctx, **sub.context_settings), f"{path} {name}")

    settings = {**cli.context_settings, "terminal_width": WIDTH, "max_content_width": WIDTH}
    root = click.Context(cli, info_name="ttft-planner", **settings)
    walk(cli, root, "ttft-planner")
    return out


def _json_table(commands: list[tuple[str, click.Command, click.Context]]) -> str:
    rows = ["| command | `--json` prints |", "| --- | --- |"]
    for path, cmd, _ctx in commands:
        option = next((p for p in cmd.params if isinstance(p, JsonOption)), None)
        if option is not None:
            rows.append(f"| `{path}` | {option.help} |")
        elif not isinstance(cmd, click.Group):
            rows.append(f"| `{path}` | — ({no_json_reason(cmd)}) |")
    return "\n".join(rows) + "\n"


def _renamed(commands: list[tuple[str, click.Command, click.Context]]) -> str:
    rows = [
        "## Renamed options and commands",
        "",
        f"The old spellings work until {REMOVED_IN}: hidden from `--help`, each prints one line on stderr naming the"
        " new one.",
        "",
        "| was | now |",
        "| --- | --- |",
    ]
    rows += [
        f"| `ttft-planner {old}` | `ttft-planner {' '.join(new)}` |" for old, new in sorted(RENAMED_COMMANDS.items())
    ]
    rows += [
        f"| `{path} {p.opts[0]}` | `{path} {p.new}` |"
        for path, cmd, _ctx in commands
        for p in cmd.params
        if isinstance(p, RenamedOption)
    ]
    return "\n".join(rows) + "\n"


def render() -> str:
    """The whole page, as docs/cli.md holds it."""
    commands = _commands()
    parts = [_INTRO, _JSON, _json_table(commands), _renamed(commands), "## Commands\n"]
    for path, cmd, ctx in commands:
        level = "###" if path.count(" ") <= 1 else "####"  # the root and its commands; a group's commands
        help_text = cmd.get_help(ctx).rstrip()
        parts.append(f"{level} `{path}`\n\n```text\n{help_text}\n```\n")
    return "\n".join(parts)


def main(argv: list[str]) -> int:
    """Write PAGE (or, with --check, say whether it is current); the exit status."""
    text = render()
    if "--check" in argv:
        current = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
        if current != text:
            print(f"{PAGE.relative_to(ROOT)} differs from --help: run python scripts/gen_cli_reference.py")
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
