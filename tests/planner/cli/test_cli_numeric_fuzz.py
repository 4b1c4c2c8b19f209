"""Every numeric option of every command, fuzzed: exit 0 or 2, never a traceback, never "nan"/"inf" in the output.

The options are enumerated from the click command tree (tests/support/cli_tree.py), so a new command or option is
covered without touching this file; a new whole-number option (a count) must also declare its largest value.
Commands that serve or probe the network are fuzzed through parsing only; the others run to completion on tiny
inputs and a temp database.
"""

from __future__ import annotations

import math
import re

import click
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.cli import cli
from planner.cli._common import BoundedFloat, BoundedInt, NumberList
from planner.inputs.validate import MAX_MAGNITUDE
from planner.store import open_store
from tests.support.cli_tree import (
    BASE_ARGS,
    COUNTS_CHECKED_ELSEWHERE,
    NO_RUN,
    PARSE_ARGS,
    count_types,
    declared_max,
    numeric_options,
    write_tiny_log,
)

OPTIONS = numeric_options()
# The attacks of the issue, then the edges of every range.
SPECIAL = [
    "nan",
    "NaN",
    "inf",
    "-inf",
    "+inf",
    "1e308",
    "-1e308",
    "1e-320",
    "9223372036854775807",
    "1e12",
    "1e13",
    "-1",
    "0",
    "1",
    "0.5",
    "abc",
    "",
    "1e3",
    "0x10",
    "1_000",
]
values = st.one_of(
    st.sampled_from(SPECIAL),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
)
_NON_FINITE = re.compile(r"(?<![\w])(nan|-?inf|infinity)(?![\w])|\$inf", re.IGNORECASE)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fuzz")
    db = f"sqlite:///{tmp / 'planner.db'}"
    open_store(db).dispose()
    return {"db": db, "log": str(write_tiny_log(tmp / "log.jsonl")), "tmp": str(tmp)}


def test_every_numeric_option_is_bounded():
    assert len(OPTIONS) > 80
    for path, _cmd, param in OPTIONS:
        inner = param.type.types if isinstance(param.type, click.Tuple) else [param.type]
        assert all(isinstance(t, (BoundedFloat, BoundedInt, NumberList)) for t in inner), (path, param.name, param.type)


def test_every_count_declares_its_largest_value():
    """A whole-number option is a count (replicas, GPUs, layers, blocks, tokens …): it states the largest value a
    real deployment could need (a planner.inputs.validate Rule, or an IntRange with a max), not only the default
    magnitude bound of 10¹², which `prefix --replicas` (3.3 GB of caches) and `--kv-from-gpu …:2^63` showed is no
    bound."""
    counts = [(path, param, t) for path, _cmd, param in OPTIONS for t in count_types(param)]
    found = {(path, param.name) for path, param, _t in counts}
    assert {
        ("prefix", "replicas"),
        ("prefix", "d_model"),
        ("capacity gpu-fit", "layers"),
        ("capacity cost", "max_replicas"),
    } <= found
    assert set(COUNTS_CHECKED_ELSEWHERE) <= found  # no exemption outlives its option
    open_ended = [
        (path, param.name, declared_max(t))
        for path, param, t in counts
        if (path, param.name) not in COUNTS_CHECKED_ELSEWHERE
        and (declared_max(t) is None or declared_max(t) >= MAX_MAGNITUDE)
    ]
    assert open_ended == []


def _args(path: str, param: click.Parameter, value: str, env: dict) -> list[str]:
    base = [a.format(**env) for a in BASE_ARGS.get(path, [])]
    if isinstance(param, click.Argument):
        return [value, *base]
    return [*base, param.opts[-1], *([value] * max(1, param.nargs))]


def _check(path: str, param: click.Parameter, value: str, env: dict) -> None:
    args = _args(path, param, value, env)
    if path in NO_RUN:
        try:
            ctx = param_cmd[path].make_context(path, args + PARSE_ARGS.get(path, []))
        except click.ClickException as exc:
            assert exc.exit_code == 2, (path, param.name, value)
            return
        for name, v in ctx.params.items():
            assert not (isinstance(v, float) and not math.isfinite(v)), (path, name, value)
        return
    res = CliRunner().invoke(cli, path.split() + args)
    assert res.exit_code in (0, 2), (path, param.name, value, res.exit_code, res.output[-500:], res.exception)
    assert res.exception is None or isinstance(res.exception, SystemExit), (path, param.name, value, res.exception)
    if res.exit_code == 0:
        assert not _NON_FINITE.search(res.output), (path, param.name, value, res.output[-500:])


param_cmd = {path: cmd for path, cmd, _ in OPTIONS}


@pytest.mark.parametrize("path,param", [(p, prm) for p, _c, prm in OPTIONS], ids=lambda x: getattr(x, "name", x))
def test_the_issue_attacks(path, param, env):
    for value in ("nan", "inf", "1e308", "1e-320", "9223372036854775807", "-1"):
        _check(path, param, value, env)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pick=st.integers(min_value=0, max_value=len(OPTIONS) - 1), value=values)
def test_random_values_exit_0_or_2(pick, value, env):
    path, _cmd, param = OPTIONS[pick]
    _check(path, param, value, env)
