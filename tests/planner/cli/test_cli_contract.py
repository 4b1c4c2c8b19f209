"""The command line's contract, held over the whole click tree (tests/support/cli_tree.py), so a new command or
option is checked without touching this file: every read command takes the one shared `--json`
(planner/cli/_output.py), every option says what it is for, an option's name carries its unit and means one thing
wherever it appears, and an old spelling (planner/cli/_renamed.py) still works for one release with a note."""

from __future__ import annotations

import json
import re

import click
import pytest
from click.testing import CliRunner

from planner.cli import cli
from planner.cli._output import JsonOption, no_json_reason
from planner.cli._renamed import REMOVED_IN, RENAMED_COMMANDS, RenamedOption
from planner.store import open_store
from planner.store.rtt import list_targets
from tests.support.cli_tree import BASE_ARGS, SLS, leaf_commands

COMMANDS = leaf_commands()
#: The unit suffixes a parameter's name may end in (planner's house style: `timeout_s`, `ttft_ms`, `window_min`).
UNITS = ("s", "ms", "min")
NOTE = re.compile(r"^note: (.+) is now (.+); the old spelling stops working in " + re.escape(REMOVED_IN) + r"\.$")


def _unit(name: str) -> str | None:
    return next((u for u in UNITS if name.endswith("_" + u)), None)


def _visible_long_flags(param: click.Parameter) -> list[str]:
    if not isinstance(param, click.Option) or param.hidden:
        return []
    return [o for o in (*param.opts, *param.secondary_opts) if o.startswith("--")]


def test_the_tree_is_walked_whole():
    paths = {p for p, _ in COMMANDS}
    assert len(paths) >= 47 and {"probe", "alerts history", "capacity cost", "logs import"} <= paths


def test_every_read_command_takes_the_shared_output_option():
    """A read command is every command not marked @no_json(why) (a server, a change answered by one line, an
    export in its own format): it takes planner.cli._output.output_option, and nothing else is called --json."""
    problems = []
    for path, cmd in COMMANDS:
        shared = [p for p in cmd.params if isinstance(p, JsonOption)]
        other = [p for p in cmd.params if "--json" in getattr(p, "opts", ()) and not isinstance(p, JsonOption)]
        why = no_json_reason(cmd)
        if other:
            problems.append(f"{path}: a --json of its own, not output_option")
        if why is None and len(shared) != 1:
            problems.append(f"{path}: a read command without output_option (or mark it @no_json(why))")
        if why is not None and shared:
            problems.append(f"{path}: marked @no_json ({why}) but takes --json")
    assert problems == []


def test_every_option_says_what_it_is_for():
    missing = [
        f"{path} {param.opts[0]}"
        for path, cmd in [("", cli), *COMMANDS]
        for param in cmd.params
        if isinstance(param, click.Option) and not (param.help or "").strip()
    ]
    assert missing == []


def test_an_option_name_carries_the_unit_of_its_value():
    """A parameter named in seconds (`timeout_s`) is spelt with the unit on the command line (`--timeout-s`)."""
    bare = [
        f"{path} {flag} ({param.name})"
        for path, cmd in COMMANDS
        for param in cmd.params
        if (unit := _unit(param.name or ""))
        for flag in _visible_long_flags(param)
        if not flag.endswith("-" + unit)
    ]
    assert bare == []


def test_one_spelling_means_one_thing_in_every_command():
    """A flag used by several commands holds a value in one unit everywhere (`--interval` was seconds in `probe`
    and a confidence level in `whatif`)."""
    units: dict[str, set[str | None]] = {}
    for _path, cmd in COMMANDS:
        for param in cmd.params:
            for flag in _visible_long_flags(param):
                units.setdefault(flag, set()).add(_unit(param.name or ""))
    assert {flag: u for flag, u in units.items() if len(u) > 1} == {}


#: Every old spelling kept for one release: command, the arguments it needs to parse, old flag, a value, the
#: parameter it sets and the value it must get.
RENAMED = [
    ("probe", ["--base-url", "http://127.0.0.1:9/v1", "--model", "m"], "--timeout", "5", "timeout_s", 5.0),
    ("probe", ["--base-url", "http://127.0.0.1:9/v1", "--model", "m"], "--interval", "0", "interval_s", 0.0),
    ("sweep", ["--base-url", "http://127.0.0.1:9/v1", "--model", "m"], "--timeout", "5", "timeout_s", 5.0),
    (
        "sweep",
        ["--base-url", "http://127.0.0.1:9/v1", "--model", "m"],
        "--step-duration",
        "2",
        "step_duration_s",
        2.0,
    ),
    ("calibrate", ["--base-url", "http://127.0.0.1:9/v1", "--model", "m"], "--timeout", "5", "timeout_s", 5.0),
    (
        "calibrate",
        ["--base-url", "http://127.0.0.1:9/v1", "--model", "m"],
        "--step-duration",
        "2",
        "step_duration_s",
        2.0,
    ),
    ("rtt", [], "--timeout", "2", "timeout_s", 2.0),
    ("regions add", ["r1", "http://127.0.0.1:9/"], "--interval", "600", "interval_s", 600.0),
    ("cold-reading", ["ep"], "--idle", "5", "idle_s", 5.0),
    ("whatif", ["--deployment", SLS], "--interval", "0.9", "level", 0.9),
]


def test_every_old_spelling_in_the_tree_is_checked_here():
    in_tree = {(path, p.opts[0]) for path, cmd in COMMANDS for p in cmd.params if isinstance(p, RenamedOption)}
    assert in_tree == {(path, old) for path, _a, old, *_ in RENAMED}


@pytest.mark.parametrize(
    ("path", "args", "old", "value", "name", "expected"), RENAMED, ids=[f"{r[0]} {r[2]}" for r in RENAMED]
)
def test_an_old_spelling_still_sets_its_option_with_a_one_line_note(path, args, old, value, name, expected, capsys):
    cmd = dict(COMMANDS)[path]
    new = next(p for p in cmd.params if isinstance(p, RenamedOption) and p.opts[0] == old).new
    assert name in cmd.make_context(path, [*args, new, value]).params
    assert capsys.readouterr().err == ""  # the new spelling: no note
    ctx = cmd.make_context(path, [*args, old, value])
    assert ctx.params[name] == pytest.approx(expected)
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and NOTE.match(err[0]) and f"{old} is now {new};" in err[0], err
    help_text = cmd.get_help(click.Context(cmd, info_name=path))
    assert new in help_text and not re.search(re.escape(old) + r"(?![-\w])", help_text)  # hidden from --help


def test_an_old_spelling_runs_the_command_as_the_new_one(sqlite_store_url):
    """`regions add … --interval 600` still schedules the target every 600 s; stdout is the same as with
    --interval-s, the note goes to stderr only."""
    db = ["--database-url", sqlite_store_url]
    old = CliRunner().invoke(cli, ["regions", "add", "old-r", "http://127.0.0.1:9/", "--interval", "600", *db])
    new = CliRunner().invoke(cli, ["regions", "add", "new-r", "http://127.0.0.1:9/", "--interval-s", "600", *db])
    assert old.exit_code == new.exit_code == 0, old.output
    assert old.stdout.replace("old-r", "new-r") == new.stdout
    assert NOTE.match(old.stderr.strip()) and new.stderr == ""
    engine = open_store(sqlite_store_url)
    assert {t.region_id: t.interval_s for t in list_targets(engine)} == {"old-r": 600.0, "new-r": 600.0}
    engine.dispose()


@pytest.mark.parametrize("old", sorted(RENAMED_COMMANDS))
def test_a_capacity_command_runs_in_its_group_and_under_its_old_name_with_a_note(old):
    path = " ".join(RENAMED_COMMANDS[old])
    args = [*BASE_ARGS[path], "--json"]
    now = CliRunner().invoke(cli, [*path.split(), *args])
    before = CliRunner().invoke(cli, [old, *args])
    assert now.exit_code == before.exit_code == 0, now.output
    assert json.loads(now.stdout) == json.loads(before.stdout)
    assert now.stderr == "" and NOTE.match(before.stderr.strip())
    assert f"`ttft-planner {old}` is now `ttft-planner {path}`" in before.stderr


def test_the_root_help_lists_the_capacity_group_and_not_the_old_names():
    text = CliRunner().invoke(cli, ["--help"]).stdout
    listed = {line.split()[0] for line in text.split("Commands:")[1].splitlines() if line.startswith("  ")}
    assert "capacity" in listed and not listed & set(RENAMED_COMMANDS)
    group = CliRunner().invoke(cli, ["capacity", "--help"]).stdout
    assert all(f"  {name}  " in group or f"  {name} " in group for name in RENAMED_COMMANDS)
