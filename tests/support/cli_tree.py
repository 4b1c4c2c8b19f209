"""The `ttft-planner` command tree, walked: every command with its path (`leaf_commands`), the numeric options (list
options typed NumberList among them), the whole-number ones that must each declare their largest value, and a base
invocation per command that runs quickly without a network or a server (used by the numeric fuzz test and the
output contract's test)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from planner.asset_files import assets_dir
from planner.cli import cli
from planner.cli._common import NumberList
from planner.cli._renamed import RenamedOption

__all__ = [
    "BASE_ARGS",
    "COUNTS_CHECKED_ELSEWHERE",
    "NO_RUN",
    "PARSE_ARGS",
    "count_types",
    "declared_max",
    "leaf_commands",
    "numeric_options",
    "write_tiny_log",
]

MOONCAKE = assets_dir() / "sample_logs" / "mooncake_conversation.jsonl"  # hash_ids: a prefix trace
SLS = "serverless:name=sls,window=3600,cold=20,slots=8,max=2,prefill=12000,decode=60,rtt=40,usd_per_mtok=0.3"

# Command path → arguments that make it run to completion on its own ({db} and {log} are filled in).
BASE_ARGS: dict[str, list[str]] = {
    "budget": ["--target-ms", "500", "--prefill-tokens-per-s", "5000", "--prompt-tokens-p95", "4000"],
    "capacity cost": [
        "--gpu-usd-per-hour",
        "3.2",
        "--capacity-tokens-per-min",
        "720000",
        "--blended-usd-per-mtok",
        "0.2",
        "--tokens-per-hour",
        "2e7",
    ],
    "capacity prefill": ["--model", "llama-3.1-8b", "--prompt-tokens", "4000"],
    "capacity gpu-fit": ["--model", "llama-3.1-8b", "--gpu", "H100"],
    "prefix": [str(MOONCAKE), "--model", "llama-3.1-8b", "--gpu", "H100"],
    "capacity warm-pool": ["--arrivals-per-hour", "100", "--service-s", "2", "--slots", "4"],
    "capacity weights": ["--params-b", "8"],
    "whatif": ["--log", "{log}", "--deployment", SLS],
    "report": ["--endpoints", "nope", "--out", "{tmp}/r.html", "--database-url", "{db}"],
    "endpoints add": ["fz", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--database-url", "{db}"],
    "endpoints edit": ["nope", "--database-url", "{db}"],
    "regions add": ["fz-region", "http://127.0.0.1:9/", "--database-url", "{db}"],
    "logs delete": ["--database-url", "{db}"],
}
# Commands that serve, probe the network or run until stopped: only their parsing is fuzzed.
NO_RUN = {"probe", "rtt", "serve", "simulate", "worker", "cold-reading", "sweep", "calibrate"}
# What those need to parse at all (parsing only: nothing is contacted).
PARSE_ARGS: dict[str, list[str]] = {
    name: ["--base-url", "http://127.0.0.1:9/v1", "--model", "m"] for name in ("probe", "sweep", "calibrate")
}


# Whole-number options that declare no largest value of their own, and why that is safe: every other whole number
# a command takes is a count (replicas, GPUs, layers, blocks, …) and states its range (a planner.inputs.validate Rule).
COUNTS_CHECKED_ELSEWHERE: dict[tuple[str, str], str] = {
    ("logs delete", "upload_id"): "an id looked up in the store, not a count",
    ("endpoints add", "prompt_tokens"): "planner.endpoints.registry checks it with PROMPT_TOKENS",
    ("endpoints add", "max_tokens"): "planner.endpoints.registry checks it with PROBE_MAX_TOKENS",
    ("endpoints edit", "prompt_tokens"): "planner.endpoints.registry checks it with PROMPT_TOKENS",
    ("endpoints edit", "max_tokens"): "planner.endpoints.registry checks it with PROBE_MAX_TOKENS",
}


def _inner(t: click.ParamType) -> list[click.ParamType]:
    return list(t.types) if isinstance(t, click.Tuple) else [t]


def count_types(param: click.Parameter) -> list[click.ParamType]:
    """The whole-number types of a parameter: int types, and NumberLists of a whole-number rule."""
    return [
        t
        for t in _inner(param.type)
        if isinstance(t, click.types.IntParamType) or (isinstance(t, NumberList) and t.rule.integer)
    ]


def declared_max(t: click.ParamType) -> float | None:
    """The largest value a whole-number type declares (its IntRange's max, its NumberList rule's top end); None when
    it declares none (only the default magnitude bounds it)."""
    if isinstance(t, NumberList):
        return t.rule.hi
    return getattr(t, "max", None)


def leaf_commands() -> list[tuple[str, click.Command]]:
    """(command path, command) for every command of the tree that runs (groups left out), as `ttft-planner --help`
    lists them; the old spellings kept for one release (planner.cli._renamed) are not walked."""
    out = []

    def walk(cmd: click.Command, path: list[str]) -> None:
        if isinstance(cmd, click.Group):
            ctx = click.Context(cmd)
            for name in sorted(cmd.list_commands(ctx)):  # get_command loads a lazily registered command
                sub = cmd.get_command(ctx, name)
                assert sub is not None, name
                walk(sub, path + [name])
            return
        out.append((" ".join(path), cmd))

    walk(cli, [])
    return out


def numeric_options() -> list[tuple[str, click.Command, click.Parameter]]:
    """(command path, command, parameter) for every int/float parameter in the tree, and every NumberList (an old
    spelling of an option, which sets the same parameter with the same type, is left out)."""
    return [
        (path, cmd, p)
        for path, cmd in leaf_commands()
        for p in cmd.params
        if not isinstance(p, RenamedOption)
        and any(
            getattr(x, "name", "") in ("float", "integer")
            or isinstance(x, (click.types.FloatParamType, click.types.IntParamType, NumberList))
            for x in _inner(p.type)
        )
    ]


def write_tiny_log(path: Path) -> Path:
    """A 40-request JSONL log over one morning."""
    day0 = 1_764_460_800_000
    lines = [
        json.dumps(
            {
                "ts_ms": day0 + 9 * 3_600_000 + i * 60_000,
                "model": "m",
                "prompt_tokens": 1000 + i,
                "cached_tokens": 500,
                "output_tokens": 40,
            }
        )
        for i in range(40)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path
