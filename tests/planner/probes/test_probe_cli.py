"""`ttft-planner probe` and `ttft-planner simulate` from the command line, against the real simulator.

No assertion here depends on machine load: the prefill fit is checked to be the fit of the samples the command
printed, and each TTFT against a lower bound set by the server's own sleep (a sleep never ends early). How close the
fitted slope comes to the configured prefill rate is a figure: bench/bench_engine.py prints it (target within 2 %).
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from click.testing import CliRunner
from sqlmodel import select

from planner.cli import cli
from planner.cli.simulate import FLAG_FOR_FIELD
from planner.probes.fit import fit_points, fit_prefill
from planner.probes.ttft import TtftSample
from planner.simulator import SimulatorConfig, running_simulator
from planner.store import open_store, session
from planner.store.endpoints import EndpointRow
from planner.store.probes import ProbeSampleRow


@pytest.fixture(scope="module")
def sim_url():
    with running_simulator(SimulatorConfig(prefill_tokens_per_s=20_000, decode_tokens_per_s=2000)) as url:
        yield url


def invoke(*args: str, env: dict | None = None):
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def invoke_probe(base_url: str, *flags: str, model: str, n: int, prompt_tokens: str, max_tokens: int):
    """`probe` of `model` at `base_url`, `n` samples back to back (--interval-s 0), with `flags` added."""
    return invoke(
        "probe",
        "--base-url",
        base_url,
        "--model",
        model,
        "-n",
        str(n),
        "--interval-s",
        "0",
        *flags,
        "--prompt-tokens",
        prompt_tokens,
        "--max-tokens",
        str(max_tokens),
    )


def refit_ms_per_1k(samples: list[dict]) -> float:
    """The prefill slope fitted anew from the printed samples (JSON mode), as the summary should report it."""
    fields = {f.name for f in dataclasses.fields(TtftSample)}
    points, _ = fit_points([TtftSample(**{k: v for k, v in s.items() if k in fields}) for s in samples])
    return fit_prefill(points).ms_per_1k_tokens


def test_probe_prints_each_sample_and_a_nearest_rank_summary(sim_url):
    r = invoke_probe(sim_url, model="sim-model", n=3, prompt_tokens="200", max_tokens=4)
    assert r.exit_code == 0, r.output
    assert r.output.count("ttft") >= 3
    assert "TTFT p50" in r.output and "p95" in r.output and "max" in r.output and "n=3" in r.output
    assert "failures 0" in r.output
    assert "p95 " in r.output and "ms (too few)" in r.output  # a p95 of 3 samples: planner.present's one mark


def test_json_mode_prints_one_object_per_sample_then_a_summary(sim_url):
    r = invoke_probe(sim_url, "--json", "--protocol", "anthropic", model="m", n=2, prompt_tokens="100", max_tokens=3)
    assert r.exit_code == 0, r.output
    lines = [json.loads(line) for line in r.output.strip().splitlines()]
    assert [x["type"] for x in lines] == ["sample", "sample", "summary"]
    assert all(x["ok"] and x["ttft_ms"] > 0 for x in lines[:2])
    summary = lines[-1]
    assert summary["n"] == 2 and summary["failures"] == 0
    assert summary["ttft_p50_ms"] == min(x["ttft_ms"] for x in lines[:2])  # nearest rank: 1st of 2


def test_two_prompt_lengths_fit_the_prefill_slope(sim_url):
    r = invoke_probe(sim_url, "--json", model="m", n=3, prompt_tokens="256,6000", max_tokens=2)
    assert r.exit_code == 0, r.output
    lines = [json.loads(line) for line in r.output.strip().splitlines()]
    samples, summary = lines[:-1], lines[-1]
    fit = summary["prefill_fit"]
    assert fit["n"] == 6 and set(summary["by_prompt_tokens"]) == {"256", "6000"}
    assert fit["ms_per_1k_tokens"] == refit_ms_per_1k(samples)
    for s in samples:  # the simulator sleeps 50 ms per 1K uncached tokens (20,000 tokens/s) before the first one
        assert s["ttft_ms"] >= (s["prompt_tokens"] - (s["cached_tokens"] or 0)) / 20


def test_keep_alive_reuses_one_connection_and_says_so(sim_url):
    r = invoke_probe(sim_url, "--json", "--keep-alive", model="m", n=3, prompt_tokens="50", max_tokens=2)
    samples = [json.loads(line) for line in r.output.strip().splitlines()[:-1]]
    assert [s["conn_reused"] for s in samples] == [False, True, True]
    assert samples[1]["connect_ms"] is None


def test_store_writes_a_manual_run(sim_url, sqlite_store_url):
    db = sqlite_store_url
    r = invoke_probe(
        sim_url,
        "--store",
        "--database-url",
        db,
        "--vantage",
        "laptop",
        model="sim-model",
        n=3,
        prompt_tokens="50",
        max_tokens=2,
    )
    assert r.exit_code == 0, r.output
    assert "stored 3 sample(s)" in r.output
    engine = open_store(db)
    with session(engine) as s:
        rows = s.exec(select(ProbeSampleRow)).all()
        eps = s.exec(select(EndpointRow)).all()
    engine.dispose()
    assert len(rows) == 3 and {r.kind for r in rows} == {"manual"} and {r.vantage for r in rows} == {"laptop"}
    assert len({r.scheduled_at_ms for r in rows}) == 3
    assert len(eps) == 1 and eps[0].base_url == sim_url and eps[0].enabled is False


def test_bad_input_exits_2_naming_the_flag():
    r = CliRunner().invoke(cli, ["probe", "--base-url", "http://x/v1", "--model", "m", "--prompt-tokens", "256,lots"])
    assert r.exit_code == 2 and "--prompt-tokens" in r.output and "lots" in r.output
    r = CliRunner().invoke(cli, ["probe", "--base-url", "127.0.0.1:8765", "--model", "m"])
    assert r.exit_code == 2 and "http://" in r.output


def test_missing_key_variable_exits_2_naming_it(monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    r = CliRunner().invoke(
        cli, ["probe", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--api-key-env", "NO_SUCH_KEY_VAR"]
    )
    assert r.exit_code == 2 and "NO_SUCH_KEY_VAR" in r.output


def test_key_never_printed_even_when_the_server_echoes_it(monkeypatch):
    monkeypatch.setenv("SIM_KEY_FOR_TEST", "sk-live-abcdefSECRET")
    with running_simulator(SimulatorConfig(api_key="the-right-key")) as url:
        r = CliRunner().invoke(
            cli, ["probe", "--base-url", url, "--model", "m", "-n", "1", "--api-key-env", "SIM_KEY_FOR_TEST", "--json"]
        )
    assert r.exit_code == 1  # every sample failed
    assert "sk-live-abcdefSECRET" not in r.output
    assert json.loads(r.output.splitlines()[0])["error_class"] == "auth"


def test_all_failed_exits_1_with_the_classes():
    r = CliRunner().invoke(
        cli, ["probe", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "-n", "2", "--interval-s", "0"]
    )
    assert r.exit_code == 1
    assert "FAILED refused" in r.output and "n=0" in r.output and "failures 2" in r.output


def test_simulate_help_documents_every_setting():
    help_text = CliRunner().invoke(cli, ["simulate", "--help"], terminal_width=200).output
    names = {f.name for f in dataclasses.fields(SimulatorConfig)}
    assert set(FLAG_FOR_FIELD) == names  # a new setting without a flag fails here
    for flag in FLAG_FOR_FIELD.values():
        assert flag in help_text, flag
    assert "SIMULATED" in help_text


def test_simulate_rejects_bad_settings_with_exit_2():
    r = CliRunner().invoke(cli, ["simulate", "--load-curve", "1,2,3"])
    assert r.exit_code == 2 and "--load-curve" in r.output
    r = CliRunner().invoke(cli, ["simulate", "--slots", "0"])
    assert r.exit_code == 2 and "slots" in r.output


def test_simulate_serves_a_probeable_endpoint_from_the_command_line():
    import os
    import subprocess
    import sys

    from tests.support.rtt_target import free_port

    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from planner.cli import main; main()",
            "simulate",
            "--port",
            str(port),
            "--model",
            "demo",
            "--prefill-tokens-per-s",
            "50000",
            "--log-level",
            "info",  # uvicorn then says when it listens
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONPATH": "."},
    )
    try:
        url = f"http://127.0.0.1:{port}/v1"
        head = []
        while not any("Uvicorn running on" in line for line in head):  # the event: its socket listens
            line = proc.stdout.readline().decode()
            assert line, f"simulate exited before listening: {''.join(head)}"
            head.append(line)
        ok = invoke_probe(url, "--json", model="demo", n=2, prompt_tokens="100", max_tokens=2)
        wrong = invoke("probe", "--base-url", url, "--model", "other", "-n", "1", "--json")
    finally:
        proc.terminate()
        out = "".join(head) + proc.communicate(timeout=60)[0].decode()
    assert json.loads(ok.output.splitlines()[-1])["n"] == 2
    assert json.loads(wrong.output.splitlines()[0])["error_class"] == "not_found"
    assert "simulated endpoint (not a real model)" in out


def test_the_servers_prompt_token_count_is_shown_and_the_prefill_fit_uses_it():
    """A chat template adds tokens the request did not ask for; the fit must see the server's count (issue 14)."""
    from tests.support.servers import Script, ScriptedServer, Step, chat_chunk, sse, usage_chunk

    template_tokens, ms_per_token = 30, 0.1

    def script(i, req) -> Script:
        counted = len(req.json()["messages"][0]["content"].split()) + template_tokens
        return Script(
            steps=[
                Step(sse(chat_chunk({"content": "x"})), delay_s=counted * ms_per_token / 1000, content=True),
                Step(sse(usage_chunk(counted, 1)) + b"data: [DONE]\n\n"),
            ]
        )

    with ScriptedServer(script) as srv:
        r = invoke_probe(srv.url, "--json", model="m", n=3, prompt_tokens="100,1000", max_tokens=1)
        text = invoke_probe(srv.url, model="m", n=1, prompt_tokens="100", max_tokens=1)
    assert r.exit_code == 0, r.output
    lines = [json.loads(line) for line in r.output.strip().splitlines()]
    samples, summary = lines[:-1], lines[-1]
    assert {s["prompt_tokens"] - s["prompt_tokens_requested"] for s in samples} == {template_tokens}
    assert summary["by_prompt_tokens"]["100"]["server_prompt_tokens_p50"] == 100 + template_tokens
    fit = summary["prefill_fit"]
    assert fit["tokens"] == "server-counted" and fit["lengths"] == [100 + template_tokens, 1000 + template_tokens]
    assert fit["ms_per_1k_tokens"] == refit_ms_per_1k(samples)  # fitted on the server's counts, as printed
    for i, s in enumerate(samples):  # each TTFT holds its 0.1 ms per counted token: the server slept that long
        assert s["ttft_ms"] >= srv.server_ttft_ms(i) >= s["prompt_tokens"] * ms_per_token
    assert "(server 130)" in text.output and "the server counted 130 prompt tokens" in text.output
