"""Issue 42 item 14: every count a deployment command takes (replicas, GPUs, a model's shape, KV blocks) has a
planner.inputs.validate rule, and a value past it is refused before any work: exit 2 with one error line naming the
option.

`prefix --replicas 9999999` (alone or in a list) built a cache per replica, 3.3 GB and past 90 s; `whatif
--kv-from-gpu …@H100:2^63` and `…@H100:` (no count) were accepted; `--d-model -1` was accepted by gpu-fit, prefill
and prefix.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from planner.capacity import specs as P
from planner.capacity.errors import CapacityError
from planner.cli import cli
from planner.inputs.validate import GPUS_PER_REPLICA, REPLICAS
from planner.kvcache.capacity import kv_capacity
from tests.support.cli_tree import BASE_ARGS, SLS, write_tiny_log

CUSTOM = ["--params-b", "8", "--layers", "32", "--kv-heads", "8", "--head-dim", "128", "--d-model", "4096"]
TRACE = BASE_ARGS["prefix"][0]
BIG = str(2**63)


def _refused(args: list[str], option: str) -> str:
    """The one error line of a command that must refuse `option` with a usage error."""
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 2, (args, res.exit_code, res.output[-800:])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    errors = [ln for ln in res.output.splitlines() if ln.lower().startswith("error")]
    assert len(errors) == 1 and option in errors[0], res.output
    return errors[0]


@pytest.mark.parametrize("value", ["9999999", "1,2,9999999", "1025", "0", "1,-1"])
def test_prefix_refuses_a_replica_count_past_the_rule(value):
    line = _refused(["prefix", TRACE, "--replicas", value], "--replicas")
    assert "1,024 replicas" in line  # the range, said


def test_prefix_refuses_more_replica_counts_than_it_replays():
    counts = ",".join(str(n) for n in range(1, 18))
    assert "at most 16" in _refused(["prefix", TRACE, "--replicas", counts], "--replicas")


def test_prefix_still_takes_replica_counts_within_the_rule():
    ctx = cli.get_command(None, "prefix").make_context("prefix", [TRACE, "--replicas", "3,1024,2,3"])
    assert ctx.params["replicas"] == (2, 3, 1024)


@pytest.mark.parametrize("count", [BIG, "65", "0", "", "x", "-1"])
def test_whatif_kv_from_gpu_refuses_a_gpu_count_past_the_rule_or_missing(count, tmp_path):
    log = str(write_tiny_log(tmp_path / "log.jsonl"))
    line = _refused(
        ["whatif", "--log", log, "--deployment", SLS, "--kv-from-gpu", f"llama-3.1-8b@H100:{count}"], "--kv-from-gpu"
    )
    assert "MODEL@GPU[:GPUS]" in line if count == "" else "64 GPUs" in line


def test_whatif_kv_from_gpu_takes_a_count_within_the_rule(tmp_path):
    log = str(write_tiny_log(tmp_path / "log.jsonl"))
    res = CliRunner().invoke(cli, ["whatif", "--log", log, "--deployment", SLS, "--kv-from-gpu", "llama-3.1-8b@H100:2"])
    assert res.exit_code == 0, res.output
    assert "prefix cache: 2× H100" in res.output


@pytest.mark.parametrize(
    ("command", "base"),
    [
        ("capacity gpu-fit", ["--gpu", "H100"]),
        ("capacity prefill", ["--prompt-tokens", "4000"]),
        ("prefix", [TRACE, "--gpu", "H100"]),
    ],
)
@pytest.mark.parametrize(
    ("option", "value"),
    [("--d-model", "-1"), ("--d-model", "0"), ("--d-model", "1000000"), ("--layers", "0"), ("--kv-heads", BIG)],
)
def test_a_custom_model_shape_past_its_rule_is_refused(command, base, option, value):
    args = list(CUSTOM)
    args[args.index(option) + 1] = value
    _refused([*command.split(), *base, *args], option)


@pytest.mark.parametrize(
    ("command", "args", "option"),
    [
        ("prefix", [TRACE, "--model", "llama-3.1-8b", "--gpus-per-replica", "65"], "--gpus-per-replica"),
        ("prefix", [TRACE, "--block-tokens", BIG], "--block-tokens"),
        ("capacity prefill", ["--model", "llama-3.1-8b", "--gpus", "65"], "--gpus"),
        ("capacity gpu-fit", ["--model", "llama-3.1-8b", "--context-tokens", BIG], "--context-tokens"),
        ("capacity gpu-fit", ["--model", "llama-3.1-8b", "--sequences", BIG], "--sequences"),
        ("capacity cost", [*BASE_ARGS["capacity cost"], "--gpus-per-replica", "65"], "--gpus-per-replica"),
        ("capacity cost", [*BASE_ARGS["capacity cost"], "--max-replicas", "1025"], "--max-replicas"),
        ("capacity weights", ["--params-b", "1e9"], "--params-b"),
        ("logs summarize", ["{log}", "--prefix-cache-blocks", BIG], "--prefix-cache-blocks"),
    ],
)
def test_every_deployment_count_option_is_refused_past_its_rule(command, args, option, tmp_path):
    log = str(write_tiny_log(tmp_path / "log.jsonl"))
    _refused([*command.split(), *(a.format(log=log) for a in args)], option)


@pytest.mark.parametrize(
    ("spec", "key"),
    [
        ("dedicated:replicas=1025,slots=1,prefill=12000,decode=60,usd_per_gpu_h=3.2", "replicas"),
        ("dedicated:replicas=2,slots=8,prefill=12000,decode=60,usd_per_gpu_h=3.2,gpus=65", "gpus"),
        ("serverless:window=300,cold=20,slots=1,max=1025,prefill=12000,decode=60", "max"),
    ],
)
def test_whatif_spec_counts_follow_the_same_rules(spec, key, tmp_path):
    log = str(write_tiny_log(tmp_path / "log.jsonl"))
    line = _refused(["whatif", "--log", log, "--deployment", spec], "--deployment")
    assert f" {key} " in line
    assert f"{REPLICAS.hi:,}" in line if key != "gpus" else f"{GPUS_PER_REPLICA.hi:,} GPUs" in line


def test_kv_capacity_refuses_a_gpu_count_past_the_rule():
    model = next(m for m in P.models() if m.key == "llama-3.1-8b")
    gpu = next(g for g in P.gpus() if g.key == "H100")
    with pytest.raises(CapacityError, match="GPUs per replica must be a whole number from 1 to 64"):
        kv_capacity(model, gpu, gpus_per_replica=2**63)
