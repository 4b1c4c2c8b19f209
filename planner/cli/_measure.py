"""What the commands that time requests share: the endpoint options, the API key check, and their event loop.

`probe`, `sweep` and `calibrate` take one endpoint the same way (--base-url, --model, --protocol, --api-key-env);
they and the worker run on the loop the probe engine measured best.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Coroutine
from typing import Any, TypeVar

import click

from planner.inputs.env_names import EnvNameError, check_env_name
from planner.inputs.urls import UrlError, check_url
from planner.probes.errors import MissingApiKey
from planner.probes.protocols import PROTOCOLS, ProbeProtocol
from planner.probes.ttft import ProbeTarget, resolve_api_key

__all__ = ["api_key_of", "run_measuring", "target_options"]

T = TypeVar("T")


def _checked_url(ctx: click.Context, param: click.Parameter, value: str) -> str:
    try:
        return check_url(value, what="--base-url")
    except UrlError as exc:
        raise click.BadParameter(str(exc), param_hint="--base-url") from None


def _checked_env_name(ctx: click.Context, param: click.Parameter, value: str) -> str:
    try:  # a key pasted here is refused and never echoed (planner.inputs.env_names)
        return check_env_name(value, "--api-key-env", optional=True)
    except EnvNameError as exc:
        raise click.BadParameter(str(exc), param_hint="--api-key-env") from None


def target_options(f):
    """--base-url (checked by planner.inputs.urls.check_url), --model, --protocol and --api-key-env: the endpoint
    a command sends its requests to, passed as base_url, model, protocol and api_key_env."""
    f = click.option(
        "--api-key-env",
        default="",
        callback=_checked_env_name,
        help="NAME of the environment variable holding the API key (the key itself is never printed or stored). "
        "Default: no key.",
    )(f)
    f = click.option(
        "--protocol",
        type=click.Choice(PROTOCOLS),
        default=ProbeProtocol.OPENAI_CHAT.value,
        show_default=True,
        help="Wire protocol.",
    )(f)
    f = click.option("--model", required=True, help="Model name to request.")(f)
    return click.option(
        "--base-url",
        required=True,
        callback=_checked_url,
        help="API base URL, e.g. http://127.0.0.1:8765/v1 or https://api.openai.com/v1 "
        "(Anthropic: https://api.anthropic.com).",
    )(f)


def api_key_of(target: ProbeTarget) -> str | None:
    """The target's API key (None: it names no variable); a named variable that is not set is a usage error."""
    try:
        return resolve_api_key(target)
    except MissingApiKey as exc:
        raise click.UsageError(str(exc)) from None


def _loop_factory():
    """uvloop when available: fewer wake-up hops between a socket read and the probe's timestamp."""
    try:
        import uvloop
    except ImportError:  # Windows, or a minimal install
        return None
    return uvloop.new_event_loop


def run_measuring(main: Coroutine[Any, Any, T]) -> T:
    """Run `main` to its end on the event loop the probe engine measured best (bench/bench_probe_accuracy.py).

    gc.collect(); gc.freeze() first parks start-up's objects outside the collector: a full collection over
    them is a multi-ms pause that would otherwise land inside some timed request.
    """
    gc.collect()
    gc.freeze()
    with asyncio.Runner(loop_factory=_loop_factory()) as runner:
        return runner.run(main)
