"""Hostile input at the CLI: credentials and secrets in URLs, proxy passwords, out-of-range dates and prices."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from planner.cli import cli


def _run(*args: str):
    return CliRunner().invoke(cli, list(args))


@pytest.mark.parametrize(
    "args",
    [
        ["probe", "--base-url", "https://user:pw@api.example.com/v1", "--model", "m", "--store"],
        ["probe", "--base-url", "http://[::1/v1", "--model", "m"],
        ["probe", "--base-url", "https://api.example.com/v1?api_key=sk-123", "--model", "m"],
        ["regions", "add", "acme", "https://user:pw@eu.api.acme.dev/health"],
        ["regions", "add", "acme", "https://eu.api.acme.dev/health\nX-Forged: 1"],
        ["endpoints", "add", "eu", "--base-url", "https://api.exa mple.com/v1", "--model", "m"],
        ["rtt", "--url", "https://user:pw@eu.api.acme.dev/"],
    ],
)
def test_urls_with_credentials_secrets_or_breaks_are_refused_before_anything_is_stored(args, tmp_path):
    res = _run(
        *args, *(["--database-url", f"sqlite:///{tmp_path / 'p.db'}"] if args[0] in ("regions", "endpoints") else [])
    )
    assert res.exit_code == 2, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
    assert "pw@" not in res.output and "sk-123" not in res.output


def test_a_proxy_password_is_never_printed():
    res = _run(
        "rtt", "--url", "127.0.0.1:9", "--proxy", "http://bob:hunter2@127.0.0.1:9", "-n", "1", "--timeout-s", "0.3"
    )
    assert "hunter2" not in res.output and "via proxy http://***@127.0.0.1:9" in res.output


@pytest.mark.parametrize(
    "args,hint",
    [
        (["--since", "99999999d"], "outside 1970–2200"),
        (["--since", "9999-12-31"], "outside 1970–2200"),
        (["--price", "e1=nan"], "--price"),
        (["--price", "e1=inf"], "--price"),
        (["--tokens-per-month", "nan"], "finite"),
    ],
)
def test_report_refuses_non_finite_and_out_of_range_values(args, hint, tmp_path):
    res = _run(
        "report",
        "--endpoints",
        "a",
        "--out",
        str(tmp_path / "r.html"),
        *args,
        "--database-url",
        f"sqlite:///{tmp_path / 'p.db'}",
    )
    assert res.exit_code == 2 and hint in res.output, res.output


def test_prefill_nan_is_refused_not_printed_as_nan_tokens():
    res = _run("capacity", "prefill", "--model", "llama-3.1-8b", "--params-b", "nan")
    assert res.exit_code == 2 and "not a finite number" in res.output
