"""A secret pasted where an environment variable's NAME belongs — a source's database URL, `Bearer sk-…`, a GitHub
token, an endpoint's key, an alert's webhook URL — is refused on the command line and by the store, with a message
naming the field and never the value; nothing is stored. Also a source's name: one line, at most 120 characters."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from planner.cli import cli
from planner.store.sources import SourceKind, add_source, list_sources
from planner.worker.source_syncs import SourceSyncs
from tests.support.secret_forms import leaks

GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"  # a name's characters, a token's shape
SECRETS = [
    "postgresql://reader:Dsn-pw-7f3e@db.internal/litellm",
    "Bearer sk-live-0123456789abcdef",
    GITHUB_TOKEN,
    "AKIAIOSFODNN7EXAMPLE",  # an AWS access key id: letters and digits only
    "https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXX",
    "OPENAI_API_KEY=sk-abc",  # the whole export line
    "A" * 121,
]


@pytest.mark.parametrize("value", ["OPENAI_API_KEY", "LITELLM_DSN", "HF_TOKEN", "_x", "AZURE_OPENAI_KEY_EASTUS2"])
def test_a_variable_s_name_is_accepted(value):
    from planner.inputs import env_names

    assert env_names.check_env_name(f" {value} ", "--x") == value and env_names.env_name_problem(value, "--x") is None


@pytest.mark.parametrize("value", SECRETS)
def test_anything_else_is_refused_without_being_echoed(value):
    from planner.inputs import env_names

    with pytest.raises(env_names.EnvNameError) as exc:
        env_names.check_env_name(value, "--litellm-dsn-env")
    said = str(exc.value)
    assert said.startswith("--litellm-dsn-env must be the NAME of an environment variable")
    assert "not stored or shown" in said and not leaks(said, [value]) and value[:8] not in said
    assert not leaks(env_names.shown_env_name(value), [value])  # a value kept by an older version is never shown either


def _cli(*args: str, store: str):
    return CliRunner().invoke(cli, [*args, "--database-url", store])


@pytest.mark.parametrize(
    "option,secret",
    [
        ("--litellm-dsn-env", SECRETS[0]),
        ("--otlp-token-env", SECRETS[1]),
        ("--litellm-dsn-env", GITHUB_TOKEN),
    ],
)
def test_sources_add_refuses_a_secret_for_a_variable_s_name(sqlite_store_url, option, secret):
    res = _cli("sources", "add", "prod", option, secret, store=sqlite_store_url)
    assert res.exit_code == 2 and f"{option} must be the NAME of an environment variable" in res.output
    assert not leaks(res.output, [secret]), res.output
    assert list_sources(sa.create_engine(sqlite_store_url)) == []


def test_the_prometheus_token_variable_is_checked_too(sqlite_store_url):
    args = ["sources", "add", "engines", "--prometheus-url", "http://prometheus:9090"]
    res = _cli(*args, "--prometheus-token-env", GITHUB_TOKEN, store=sqlite_store_url)
    assert res.exit_code == 2 and "--prometheus-token-env must be the NAME" in res.output
    assert not leaks(res.output, [GITHUB_TOKEN]) and list_sources(sa.create_engine(sqlite_store_url)) == []
    assert _cli(*args, "--prometheus-token-env", "PROM_TOKEN", store=sqlite_store_url).exit_code == 0


def test_endpoints_probe_and_alerts_refuse_a_secret_for_a_variable_s_name(sqlite_store_url):
    url = "http://127.0.0.1:9/v1"
    checks = [
        (["endpoints", "add", "ep", "--base-url", url, "--model", "m", "--api-key-env", SECRETS[1]], SECRETS[1]),
        (["endpoints", "add", "ep", "--base-url", url, "--model", "m", "--api-key-env", GITHUB_TOKEN], GITHUB_TOKEN),
        (["probe", "--base-url", url, "--model", "m", "--api-key-env", SECRETS[1], "--store"], SECRETS[1]),
        (
            ["alerts", "add", "slow", "--kind", "p95_over", "--threshold", "900", "--webhook-env", SECRETS[4]],
            SECRETS[4],
        ),
        (
            ["alerts", "add", "slow", "--kind", "p95_over", "--threshold", "900", "--webhook-env", GITHUB_TOKEN],
            GITHUB_TOKEN,
        ),
    ]
    for args, secret in checks:
        res = _cli(*args, store=sqlite_store_url)
        assert res.exit_code == 2 and "must be the NAME of an environment variable" in res.output, (args, res.output)
        assert not leaks(res.output, [secret]), res.output
    with sa.create_engine(sqlite_store_url).connect() as conn:
        for table in ("endpoint", "alert_rule", "probe_sample"):
            assert conn.execute(sa.text(f"SELECT count(*) FROM {table}")).scalar() == 0, table


@pytest.mark.parametrize("kind", [SourceKind.LITELLM, SourceKind.OTLP, SourceKind.PROMETHEUS])
def test_the_store_refuses_a_secret_for_a_source_s_variable(sqlite_engine, kind):
    url = "http://prometheus:9090" if kind is SourceKind.PROMETHEUS else None
    with pytest.raises(ValueError) as exc:
        add_source(sqlite_engine, "prod", kind, SECRETS[0], url=url)
    assert "must be the NAME of an environment variable" in str(exc.value) and not leaks(str(exc.value), [SECRETS[0]])
    assert list_sources(sqlite_engine) == []


def test_a_secret_kept_by_an_older_version_is_never_listed_or_used(sqlite_store_url):
    """A source row written before the check (straight into the table): listed and refused without showing it."""
    eng = sa.create_engine(sqlite_store_url)
    with eng.begin() as conn:
        conn.execute(
            sa.text("INSERT INTO source (name, kind, secret_ref, created_at_ms, n_requests) VALUES (:n, :k, :s, 0, 0)"),
            {"n": "old", "k": "litellm", "s": SECRETS[0]},
        )
    out = [_cli("sources", "list", store=sqlite_store_url), _cli("sources", "list", "--json", store=sqlite_store_url)]
    out += [
        _cli("sources", "test", "old", store=sqlite_store_url),
        _cli("sources", "sync", "old", store=sqlite_store_url),
    ]
    assert [r.exit_code for r in out] == [0, 0, 1, 1]
    SourceSyncs(eng, every_s=60, now_ms=lambda: 0, holds_lease=lambda: True).sync_all()  # the worker's sync
    with eng.connect() as conn:
        [kept] = conn.execute(sa.text("SELECT last_error FROM source WHERE name = 'old'")).one()
    assert kept and not leaks(kept, ["Dsn-pw-7f3e", SECRETS[0]]), kept
    assert all("not a variable's name: hidden" in r.output for r in out), [r.output for r in out]
    assert not leaks("\n".join(r.output for r in out), ["Dsn-pw-7f3e", SECRETS[0]])


@pytest.mark.parametrize(
    "name,why",
    [("prod\nFAKE LOG LINE", "control character"), ("x" * 10_000, "at most 120 characters, got 10,000")],
    ids=["a line break", "10,000 characters"],
)
def test_a_source_s_name_is_one_line_of_at_most_120_characters(sqlite_store_url, name, why):
    res = _cli("sources", "add", name, "--litellm-dsn-env", "LITELLM_DSN", store=sqlite_store_url)
    assert res.exit_code == 2 and why in res.output and "name" in res.output, res.output
    assert "FAKE LOG LINE" not in res.output and list_sources(sa.create_engine(sqlite_store_url)) == []
    with pytest.raises(ValueError, match=why):
        add_source(sa.create_engine(sqlite_store_url), name, SourceKind.OTLP, "OTLP_TOKEN")
