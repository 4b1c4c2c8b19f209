"""The command line's output contract: which commands take `--json`, and the one JSON shape of each kind.

*A read command* is every command whose output is a result to read. That is every command but three kinds, each
marked on the command itself with `@no_json(why)`: a server that runs until stopped (`serve`, `worker`,
`simulate`, `sources receive`), a change that answers with one line confirming it (`endpoints add`, `alerts
remove`, …), and an export that prints a document in its own format (`endpoints export`: TOML). So a new command is
a read command until it says otherwise, and tests/planner/cli/test_cli_contract.py fails on a read command without
`output_option` (or a marked one with it).

`--json` prints JSON Lines, always: one JSON object per line, UTF-8, nothing else on stdout (notes, progress and
errors go to stderr; NaN and infinity are written as null). A command declares one of three shapes:

- `OBJECT` — a single result (`budget`, `capacity cost`, `logs summarize`, `report`): exactly one line.
- `LIST` — records of one kind (`endpoints list`, `alerts history`, `sources hours`): one line per record, in the
  order the text output shows them; no line at all when there are none.
- `STREAM` — items measured one by one, then what they add up to (`probe`, `sweep`): one line per item as it is
  measured, each with `"type"` naming the item (`"sample"`, `"step"`), then one line with `"type": "summary"`.

Why JSON Lines rather than an array for a list: one rule then covers all three shapes (read line by line,
`json.loads` each), a stream can be printed while it is measured and stays valid when Ctrl-C cuts it short, a long
list is never held whole, and `jq -s .` turns any of them into an array when one is wanted.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import click

from planner.cli._common import echo_json

__all__ = [
    "CHANGE",
    "EXPORT",
    "NO_JSON_ATTRIBUTE",
    "SERVER",
    "JsonOption",
    "Shape",
    "echo_lines",
    "no_json",
    "no_json_reason",
    "output_option",
]

C = TypeVar("C", bound=click.Command)
F = TypeVar("F", bound=Callable[..., Any])

#: The attribute `no_json` sets on a command: why it prints no JSON.
NO_JSON_ATTRIBUTE = "no_json_reason"

#: Why a command is not a read command: the three kinds (`no_json(SERVER)`, …).
SERVER = "a server: it runs until stopped, and what it prints is its log"
CHANGE = "a change: it answers with one line confirming it"
EXPORT = "an export: it prints a document in its own format"


class Shape(enum.Enum):
    """The one JSON shape of a command's result (see the module docstring)."""

    OBJECT = "object"
    LIST = "list"
    STREAM = "stream"


_HELP = {
    Shape.OBJECT: "Print the result as one JSON object on one line.",
    Shape.LIST: "Print JSON Lines: one object per {item}; no line when there is none.",
    Shape.STREAM: 'Print JSON Lines: one object per {item} as it is measured ("type": "{item}"), '
    'then one "type": "summary" object.',
}


class JsonOption(click.Option):
    """The shared `--json` flag, knowing the shape it promises (`shape`) and the item a LIST or STREAM line holds."""

    def __init__(self, *args: Any, shape: Shape, item: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.shape = shape
        self.item = item


def output_option(shape: Shape, item: str = "") -> Callable[[F], F]:
    """The `--json` option of a read command, passed to it as `as_json` (bool); `item` names what one line of a
    LIST or STREAM holds ("endpoint", "sample"). Raises ValueError for a LIST or STREAM without an item."""
    if shape is not Shape.OBJECT and not item:
        raise ValueError(f"a {shape.value} names the item each line holds")
    return click.option(
        "--json", "as_json", cls=JsonOption, shape=shape, item=item, is_flag=True, help=_HELP[shape].format(item=item)
    )


def echo_lines(records: Iterable[Any]) -> None:
    """A LIST's JSON Lines: one object per record (a dict, a dataclass or an object with to_dict())."""
    for record in records:
        echo_json(record)


def no_json(why: str) -> Callable[[C], C]:
    """Mark a command that is not a read command (a server, a change answered by one line, an export in its own
    format) with `why`, shown by the contract test. Goes above the command's decorator (it takes the command)."""

    def mark(command: C) -> C:
        setattr(command, NO_JSON_ATTRIBUTE, why)
        return command

    return mark


def no_json_reason(command: click.Command) -> str | None:
    """Why `command` prints no JSON (`no_json`), or None for a read command."""
    return getattr(command, NO_JSON_ATTRIBUTE, None)
