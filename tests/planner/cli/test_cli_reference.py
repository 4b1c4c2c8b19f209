"""docs/cli.md is the command line's own --help (scripts/gen_cli_reference.py): a changed option, command or help
text fails here until the page is regenerated, so the manual cannot drift from the tool."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def generator():
    spec = importlib.util.spec_from_file_location("gen_cli_reference", ROOT / "scripts" / "gen_cli_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_cli_md_is_the_help_of_today():
    """The script, run as a maintainer runs it (its own process: no other test's click contexts), finds the page
    current; a narrow terminal changes nothing, the page is laid out at 100 columns."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "COLUMNS": "40"}
    out = subprocess.run(
        [sys.executable, "scripts/gen_cli_reference.py", "--check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_page_holds_every_command_and_its_json_shape(generator):
    page = generator.render()
    for heading in (
        "### `ttft-planner capacity`",
        "#### `ttft-planner capacity warm-pool`",
        "#### `ttft-planner alerts history`",
    ):
        assert heading in page
    assert "| `ttft-planner alerts history` | Print JSON Lines: one object per transition;" in page
    assert "| `ttft-planner cost` | `ttft-planner capacity cost` |" in page  # the renamed table
    assert "--timeout-s" in page and "| `ttft-planner probe --timeout` | `ttft-planner probe --timeout-s` |" in page
