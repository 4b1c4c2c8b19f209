"""Issue 28 item 12: every numeric option of every command, fed the same hostile set, exits 2 with one line naming
the option, or runs to a finite result: never a traceback, never nan/inf printed, never a server left running.

The options come from the click command tree itself (a new numeric option, or a new list option typed NumberList,
is covered without touching this file); so do the what-if candidate keys (KEY_RULES). Commands that serve or
measure run in-process up to the point where they would start (their `run_measuring`, `serve_forever`, … are
replaced by a stand-in that records the values they were given and stops), so a hostile value must be refused
before anything starts.
"""

from __future__ import annotations

import itertools
import math
import re
import sys

import click
import pytest
from click.testing import CliRunner

from planner.cli import cli
from planner.cli._common import BoundedFloat, BoundedInt, NumberList
from planner.endpoints.registry import add_endpoint
from planner.store import open_store
from planner.store.sources import SourceKind, add_source
from planner.whatif.deployment import DEDICATED_KEYS, KEY_RULES, NAMED_KEYS, SERVERLESS_KEYS
from tests.support.cli_tree import BASE_ARGS, write_tiny_log

BIG = str(2**63 - 1)
HOSTILE = ["nan", "inf", "-inf", "-1", "0", "1e-320", "1e308", BIG]
LIST_HOSTILE = [*HOSTILE, "1,inf", "1,nan", "1,-1", "1,1e308", f"1,{BIG}", "1,1e-320", "", "1,,x"]
_NON_FINITE = re.compile(r"(?<![\w])(nan|-?inf|infinity)(?![\w])|\$inf", re.IGNORECASE)
_CUSTOM_MODEL = ["--params-b", "8", "--layers", "32", "--kv-heads", "8", "--head-dim", "128"]
_TARGET = ["--base-url", "http://127.0.0.1:9/v1", "--model", "m"]

# Command path → arguments that make it run (or reach its start) on its own; {db}, {log}, {tmp} are filled in.
BASE: dict[str, list[str]] = {
    **BASE_ARGS,
    "capacity prefill": [*_CUSTOM_MODEL, "--d-model", "4096", "--prompt-tokens", "4000"],
    "capacity gpu-fit": [*_CUSTOM_MODEL, "--gpu", "H100"],
    "prefix": [BASE_ARGS["prefix"][0], *_CUSTOM_MODEL, "--gpu", "H100"],
    "alerts add": ["rule-{uid}", "--threshold", "500", "--database-url", "{db}"],
    "endpoints add": ["ep-{uid}", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--database-url", "{db}"],
    "endpoints edit": ["edit-ep", "--model", "m2", "--database-url", "{db}"],
    "regions add": ["region-{uid}", "http://127.0.0.1:9/", "--database-url", "{db}"],
    "report": ["--endpoints", "cold-ep", "--out", "{tmp}/r.html", "--database-url", "{db}"],
    "capacity warm-pool": ["--arrivals-per-hour", "100", "--service-s", "2", "--slots", "4"],
    "alerts history": ["--database-url", "{db}"],
    "logs import": ["{log}", "--database-url", "{db}"],
    "logs summarize": ["{log}"],
    "logs delete": ["1", "--database-url", "{db}"],
    "sources sync": ["src", "--database-url", "{db}"],  # its DSN variable is unset: it stops there, exit 1
    "sources receive": ["spans", "--database-url", "{db}"],  # its token variable is unset: it stops there, exit 1
    "sources prometheus": ["http://127.0.0.1:9"],  # nothing listens there: it stops at the first request, exit 1
    "sources hours": ["src", "--database-url", "{db}"],  # nothing stored yet: it says so
    "cold-reading": ["cold-ep", "--no-wait", "--database-url", "{db}"],
    "worker": ["--database-url", "{db}"],
    "serve": ["--database-url", "{db}"],
    "simulate": [],
    "probe": _TARGET,
    "calibrate": _TARGET,
    "sweep": _TARGET,
    "rtt": ["--url", "127.0.0.1:9"],
}
# Options of which a command needs exactly one: the base gets the first one the option under test is not.
ONE_OF: dict[str, list[list[str]]] = {"sweep": [["--rates", "1"], ["--concurrency", "1"]]}
# Where a long-running command would start: replaced by a stand-in that records its context and stops.
START_SEAMS = ("run_measuring", "serve_forever", "_start_simulator", "probe_rtt_many")


class _Started(Exception):
    """The command got past its checks to where it would start serving or measuring."""


def _is_numeric(t: click.ParamType) -> bool:
    inner = t.types if isinstance(t, click.Tuple) else [t]
    return any(isinstance(x, (click.types.FloatParamType, click.types.IntParamType, NumberList)) for x in inner)


def _options() -> list[tuple[str, click.Parameter]]:
    out = []

    def walk(cmd: click.Command, path: list[str]) -> None:
        if isinstance(cmd, click.Group):
            ctx = click.Context(cmd)
            for name in sorted(cmd.list_commands(ctx)):
                walk(cmd.get_command(ctx, name), [*path, name])
            return
        out.extend((" ".join(path), p) for p in cmd.params if _is_numeric(p.type))

    walk(cli, [])
    return out


OPTIONS = _options()


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    db = f"sqlite:///{tmp / 'planner.db'}"
    engine = open_store(db)
    for name in ("cold-ep", "edit-ep"):
        add_endpoint(
            engine, {"name": name, "base_url": "http://127.0.0.1:9/v1", "model": "m", "scale_down_window_s": 60}
        )
    add_source(engine, "src", SourceKind.LITELLM, "UNSET_LITELLM_DSN_OF_THE_FUZZ")
    add_source(engine, "spans", SourceKind.OTLP, "UNSET_OTLP_TOKEN_OF_THE_FUZZ")
    engine.dispose()
    log = str(write_tiny_log(tmp / "log.jsonl"))
    assert CliRunner().invoke(cli, ["logs", "import", log, "--database-url", db]).exit_code == 0  # upload 1
    return {"db": db, "log": log, "tmp": str(tmp)}


_uid = itertools.count()


def _fill(args: list[str], env: dict) -> list[str]:
    uid = next(_uid)
    return [a.format(uid=uid, **env) for a in args]


@pytest.fixture
def started(monkeypatch):
    """Every start seam of every loaded CLI module stops the command, keeping the values it was parsed with."""
    seen: list[dict] = []

    def stand_in(*args, **kwargs):
        for a in args:
            close = getattr(a, "close", None)
            if callable(close) and hasattr(a, "cr_frame"):  # a coroutine that will never be awaited
                close()
        ctx = click.get_current_context(silent=True)
        seen.append(dict(ctx.params) if ctx else {})
        raise _Started

    for name, module in list(sys.modules.items()):
        if name.startswith("planner.cli"):
            for seam in START_SEAMS:
                if hasattr(module, seam):
                    monkeypatch.setattr(module, seam, stand_in)
    return seen


def _opt(param: click.Parameter) -> str:
    return param.opts[-1] if isinstance(param, click.Option) else param.human_readable_name


def _args(path: str, param: click.Parameter, value: str, env: dict) -> list[str]:
    base = _fill(BASE.get(path, []), env)
    alternatives = ONE_OF.get(path, [])
    if alternatives and _opt(param) not in [alt[0] for alt in alternatives]:
        base += alternatives[0]
    if isinstance(param, click.Argument):  # the command's one argument, after "--" so that "-1" is a value
        return [*(base[1:] if base and not base[0].startswith("-") else base), "--", value]
    return [*base, _opt(param), *([value] * max(1, param.nargs))]


def _invoke(path: str, args: list[str], environ: dict[str, str] | None = None):
    return CliRunner().invoke(cli, [*path.split(), *args], env=environ)


def _names(param: click.Parameter) -> list[str]:
    if isinstance(param, click.Argument):
        return [param.human_readable_name]
    return [*param.opts, *param.secondary_opts]


def _assert_answered(path: str, param: click.Parameter, value: str, res, seen: list[dict], baseline: int) -> None:
    where = (path, _opt(param), value, res.exit_code, res.output[-600:])
    assert "Traceback" not in res.output, where
    assert res.exception is None or isinstance(res.exception, (SystemExit, _Started)), (*where, res.exception)
    if res.exit_code == 2:
        errors = [ln for ln in res.output.splitlines() if ln.lower().startswith("error:")]
        assert len(errors) == 1, where
        assert any(n in errors[0] for n in _names(param)), where
        return
    if isinstance(res.exception, _Started):
        assert seen, where
        for name, v in seen[-1].items():
            vals = v if isinstance(v, tuple) else (v,)
            assert all(not (isinstance(x, float) and not math.isfinite(x)) for x in vals), (*where, name, v)
        return
    assert res.exit_code in (0, baseline), where
    assert not _NON_FINITE.search(res.output), where


@pytest.fixture(scope="module")
def baselines(env):
    """Each command's exit code with its base arguments alone: they must be usable (not a usage error), or a
    hostile value's exit 2 would prove nothing."""
    return {}


def _baseline(path: str, env: dict, baselines: dict, started) -> int:
    if path not in baselines:
        assert path in BASE, f"give `{path}` a base invocation in BASE (and a start seam if it serves or measures)"
        res = _invoke(path, _fill(BASE[path], env) + ONE_OF.get(path, [[]])[0])
        assert res.exit_code != 2 or isinstance(res.exception, _Started), (path, res.output[-600:])
        assert "Traceback" not in res.output, (path, res.output[-600:])
        baselines[path] = res.exit_code
    return baselines[path]


def test_the_tree_has_the_numeric_options_of_the_issue():
    found = {(p, _opt(prm)) for p, prm in OPTIONS}
    for item in [
        ("sweep", "--rates"),
        ("sweep", "--concurrency"),
        ("calibrate", "--samples"),
        ("calibrate", "--prompt-tokens"),
        ("worker", "--metrics-port"),
        ("worker", "--alerts-every-s"),
        ("worker", "--retention-days"),
        ("simulate", "--rate-5xx"),
        ("simulate", "--rate-429"),
        ("simulate", "--retry-after-s"),
        ("simulate", "--seed"),
    ]:
        assert item in found, item
    for _p, prm in OPTIONS:
        inner = prm.type.types if isinstance(prm.type, click.Tuple) else [prm.type]
        assert all(isinstance(t, (BoundedFloat, BoundedInt, NumberList)) for t in inner), (_p, prm.name)


@pytest.mark.parametrize(("path", "param"), OPTIONS, ids=[f"{p}:{_opt(prm)}" for p, prm in OPTIONS])
def test_every_numeric_option_answers_the_hostile_set(path, param, env, started, baselines):
    baseline = _baseline(path, env, baselines, started)
    values = LIST_HOSTILE if isinstance(param.type, NumberList) else HOSTILE
    for value in values:
        started.clear()
        res = _invoke(path, _args(path, param, value, env))
        _assert_answered(path, param, value, res, started, baseline)
        if isinstance(param, click.Option) and isinstance(param.envvar, str):  # the same value from the environment
            started.clear()
            res = _invoke(path, _args(path, param, value, env)[:-2], {param.envvar: value})
            _assert_answered(path, param, value, res, started, baseline)


SPEC_BASE = {
    "serverless": dict(window="300", cold="20", slots="8", max="2", prefill="12000", decode="60"),
    "dedicated": dict(replicas="2", slots="8", prefill="12000", decode="60", usd_per_gpu_h="3.2"),
}
SPEC_KEYS = [
    (kind, key) for kind, keys in (("serverless", SERVERLESS_KEYS), ("dedicated", DEDICATED_KEYS)) for key in keys
]


def test_every_candidate_key_has_a_rule():
    # a number has its range; a name (engine=, routing=, eviction=) its list of names
    assert {k for _kind, k in SPEC_KEYS} <= set(KEY_RULES) | set(NAMED_KEYS) | {"engine"}


@pytest.mark.parametrize(("kind", "key"), SPEC_KEYS, ids=[f"{k}:{key}" for k, key in SPEC_KEYS])
def test_every_whatif_candidate_key_answers_the_hostile_set(kind, key, env):
    for value in HOSTILE:
        pairs = {**SPEC_BASE[kind], key: value}
        spec = f"{kind}:" + ",".join(f"{k}={v}" for k, v in pairs.items())
        res = _invoke("whatif", ["--log", env["log"], "--deployment", spec])
        where = (kind, key, value, res.exit_code, res.output[-600:])
        assert "Traceback" not in res.output and (res.exception is None or isinstance(res.exception, SystemExit)), (
            *where,
            res.exception,
        )
        if res.exit_code == 2:
            errors = [ln for ln in res.output.splitlines() if ln.startswith("Error:")]
            assert len(errors) == 1 and "--deployment" in errors[0] and f" {key} " in errors[0], where
        else:
            assert res.exit_code == 0 and not _NON_FINITE.search(res.output), where


def _curve(bad: str) -> str:
    return ",".join(["0.1"] * 23 + [bad])


@pytest.mark.parametrize(
    ("path", "option", "make"),
    [
        ("simulate", "--load-curve", _curve),
        ("report", "--price", lambda v: f"cold-ep={v}"),
    ],
)
def test_key_value_and_list_options_answer_the_hostile_set(path, option, make, env, started):
    for value in HOSTILE:
        res = _invoke(path, [*_fill(BASE[path], env), option, make(value)])
        where = (path, option, value, res.exit_code, res.output[-600:])
        assert "Traceback" not in res.output, where
        if res.exit_code == 2:
            errors = [ln for ln in res.output.splitlines() if ln.startswith("Error:")]
            assert len(errors) == 1 and option in errors[0], where
        else:  # accepted: it got as far as starting (simulate) or wrote its report with finite figures
            assert isinstance(res.exception, _Started) or res.exit_code in (0, 1), where
            assert not _NON_FINITE.search(res.output), where


def test_a_calibration_without_a_prefill_slope_is_one_line_not_a_traceback(monkeypatch):
    class NoSlope:
        def spec(self, name: str) -> str:
            raise ValueError("the prefill fit has no positive slope: probe longer prompts")

    def measured(coro):
        coro.close()
        return NoSlope()

    monkeypatch.setattr("planner.cli.calibrate.run_measuring", measured)
    res = _invoke("calibrate", [*_TARGET, "--samples", "1_000"])
    assert res.exit_code == 1 and "Traceback" not in res.output, res.output
    assert res.output.strip().splitlines() == ["Error: the prefill fit has no positive slope: probe longer prompts"]
