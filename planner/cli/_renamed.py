"""Old spellings kept for one release: a renamed option or command still works, hidden from --help, and says
once on stderr what it is called now.

House style: an option's name carries its unit (`--timeout-s`, `--interval-s`), one spelling means one thing
(`--interval` was seconds in `probe` and a confidence level in `whatif`), and the capacity commands sit in one
group as on the Capacity & cost page. Every old spelling is listed in the generated CLI reference (docs/cli.md,
from `renamed_options` and `RENAMED_COMMANDS`) and goes in `REMOVED_IN`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click
from click.core import ParameterSource

__all__ = ["REMOVED_IN", "RENAMED_COMMANDS", "RenamedOption", "note_renamed", "renamed_option"]

C = TypeVar("C", bound=click.Command)

#: The release in which the old spellings stop working.
REMOVED_IN = "0.2.0"

#: An old top-level command name → its path now.
RENAMED_COMMANDS: dict[str, tuple[str, ...]] = {
    "cost": ("capacity", "cost"),
    "gpu-fit": ("capacity", "gpu-fit"),
    "prefill": ("capacity", "prefill"),
    "warm-pool": ("capacity", "warm-pool"),
    "weights": ("capacity", "weights"),
}


def note_renamed(old: str, new: str) -> None:
    """The one-line deprecation note on stderr: `old` is called `new` now and stops working in REMOVED_IN."""
    click.echo(f"note: {old} is now {new}; the old spelling stops working in {REMOVED_IN}.", err=True)


class RenamedOption(click.Option):
    """The old spelling `old` of option `target`: hidden, of the same type, and given, it sets `target`'s parameter
    (after a deprecation note) unless the new spelling is given too: then the new one wins."""

    def __init__(self, old: str, target: click.Option) -> None:
        self.new = next(o for o in target.opts if o.startswith("--"))
        self.target = target
        # A name of its own: the parser keys values by name, so sharing the target's would hide which was typed.
        super().__init__(
            [old, f"{target.name}__renamed"],
            type=target.type,
            multiple=target.multiple,
            hidden=True,
            expose_value=False,
            callback=self._set_target,
            help=f"The old spelling of {self.new} (until {REMOVED_IN}).",
        )

    def _set_target(self, ctx: click.Context, param: click.Parameter, value: Any) -> None:
        if ctx.get_parameter_source(param.name or "") is not ParameterSource.COMMANDLINE:
            return
        note_renamed(self.opts[0], self.new)
        name = self.target.name or ""
        if ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE:
            return  # the new spelling was given too (and read first): it wins
        if self.target.callback is not None:
            value = self.target.callback(ctx, self.target, value)
        # click keeps a value another option's callback set, unless the target itself comes from the command line
        ctx.params[name] = value
        ctx.set_parameter_source(name, ParameterSource.COMMANDLINE)


def renamed_option(old: str, new: str) -> Callable[[C], C]:
    """Keep `old` working as a hidden alias of the command's option `new` until REMOVED_IN. Goes above the command's
    decorator (it takes the command); raises LookupError when the command has no option `new`."""

    def add(command: C) -> C:
        target = next((p for p in command.params if isinstance(p, click.Option) and new in p.opts), None)
        if target is None:
            raise LookupError(f"{command.name} has no option {new}")
        command.params.append(RenamedOption(old, target))
        return command

    return add
