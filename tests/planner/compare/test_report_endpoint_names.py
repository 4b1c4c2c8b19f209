"""`ttft-planner report` chooses an endpoint whose name holds a comma: `--endpoint NAME` (repeatable) takes a name
whole, never split; `--endpoints` still splits a comma-separated list, and a value that is exactly a stored name wins
over splitting it."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from planner.cli import cli
from planner.store import open_store
from tests.support.compare_seed import seed_endpoint
from tests.support.store_template import migrated_sqlite


@pytest.fixture(scope="module")
def store_url(tmp_path_factory) -> str:
    """Endpoints "eu, fast" (~300 ms), "eu" and "fast" (the pieces a split would make), and slow-b (~600 ms)."""
    url = migrated_sqlite(tmp_path_factory.mktemp("comma") / "planner.db")
    engine = open_store(url)
    for i, (name, median_ms) in enumerate([("eu, fast", 300), ("eu", 450), ("fast", 500), ("slow-b", 600)]):
        seed_endpoint(engine, name, median_ms=median_ms, n=120, seed=i + 1)
    engine.dispose()
    return url


def _ranked(store_url: str, tmp_path, *args: str) -> list[str]:
    res = CliRunner().invoke(
        cli, ["report", *args, "--database-url", store_url, "--out", str(tmp_path / "r.html"), "--json"]
    )
    assert res.exit_code == 0, res.output
    return [r["endpoint"] for r in json.loads(res.output)["ranking"]]


def test_endpoint_takes_a_name_with_a_comma_whole(store_url, tmp_path):
    assert _ranked(store_url, tmp_path, "--endpoint", "eu, fast", "--endpoint", "slow-b") == ["eu, fast", "slow-b"]
    # beside a list: the whole name and the list's names, each once
    assert _ranked(store_url, tmp_path, "--endpoint", "eu, fast", "--endpoints", "slow-b,eu, fast") == [
        "eu, fast",
        "eu",
        "fast",
        "slow-b",
    ]


def test_endpoints_splits_a_list_unless_the_value_is_exactly_a_stored_name(store_url, tmp_path):
    assert _ranked(store_url, tmp_path, "--endpoints", "eu,slow-b") == ["eu", "slow-b"]
    assert _ranked(store_url, tmp_path, "--endpoints", "eu, fast") == ["eu, fast"]  # the exact name wins


def test_no_endpoint_at_all_is_refused_before_the_store_is_read(tmp_path):
    missing = tmp_path / "none.db"
    res = CliRunner().invoke(
        cli, ["report", "--database-url", f"sqlite:///{missing}", "--out", str(tmp_path / "r.html")]
    )
    assert res.exit_code == 2 and "--endpoint NAME" in res.output
    assert not missing.exists() and not (tmp_path / "r.html").exists()
