"""CLI writes on a locked, read-only or unreachable database: one line on stderr, exit 1, no traceback (SQLite and
PostgreSQL); PostgreSQL-only bad records (long fields, NUL) rejected one by one while the rest is imported."""

from __future__ import annotations

import socket
import sqlite3

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from planner.cli import cli
from planner.endpoints.registry import list_endpoints
from planner.store import database, open_store
from tests.support.cli_tree import write_tiny_log


def _one_line_error(res, *fragments: str) -> str:
    assert res.exit_code == 1, (res.exit_code, res.output)
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    err = res.stderr.strip()
    assert "Traceback" not in res.output and "[SQL" not in res.output, res.output
    assert len(err.splitlines()) == 1 and err.startswith("error: the database"), err
    for f in fragments:
        assert f in err, err
    return err


def _invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_writes_on_a_locked_sqlite_database_are_one_line(sqlite_store_url, tmp_path, monkeypatch):
    # The product waits 5 s for a lock; what is tested is what it says once it gives up, so it gives up sooner here.
    monkeypatch.setattr(database, "SQLITE_BUSY_TIMEOUT_MS", 200)
    url = sqlite_store_url
    holder = sqlite3.connect(tmp_path / "planner.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another program holds the write lock past the busy timeout
    try:
        res = _invoke(
            "endpoints", "add", "eu", "--base-url", "https://api.example.com/v1", "--model", "m", "--database-url", url
        )
        _one_line_error(res, "locked", "your changes were not saved")
        res = _invoke("regions", "add", "acme-eu", "https://eu.api.acme.dev/health", "--database-url", url)
        _one_line_error(res, "locked")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert (
        _invoke(
            "endpoints", "add", "eu", "--base-url", "https://api.example.com/v1", "--model", "m", "--database-url", url
        ).exit_code
        == 0
    )


def test_writes_on_a_read_only_sqlite_database_are_one_line(tmp_path, monkeypatch):
    db = tmp_path / "planner.db"
    open_store(f"sqlite:///{db}").dispose()
    monkeypatch.chdir(tmp_path)  # SQLite URI form: the engine makes the (odd) parent folder "file:" here
    url = f"sqlite:///file:{db}?mode=ro&uri=true"
    log = write_tiny_log(tmp_path / "log.jsonl")
    for args in (
        ["endpoints", "add", "eu", "--base-url", "https://api.example.com/v1", "--model", "m"],
        ["regions", "add", "acme-eu", "https://eu.api.acme.dev/health"],
        ["logs", "import", str(log)],
    ):
        _one_line_error(_invoke(*args, "--database-url", url), "read-only")


@pytest.mark.postgres
def test_writes_on_a_read_only_postgres_database_are_one_line(pg_store_url):
    eng = sa.create_engine(pg_store_url)
    with eng.begin() as conn:
        dbname = conn.execute(sa.text("SELECT current_database()")).scalar()
        conn.execute(sa.text(f'ALTER DATABASE "{dbname}" SET default_transaction_read_only = on'))
    eng.dispose()
    res = _invoke(
        "endpoints",
        "add",
        "eu",
        "--base-url",
        "https://api.example.com/v1",
        "--model",
        "m",
        "--database-url",
        pg_store_url,
    )
    _one_line_error(res, "read-only", "your changes were not saved")


def test_an_unreachable_database_is_one_line():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"postgresql+psycopg://planner:secret-pw@127.0.0.1:{port}/planner"
    res = _invoke(
        "endpoints", "add", "eu", "--base-url", "https://api.example.com/v1", "--model", "m", "--database-url", url
    )
    _one_line_error(res, "not available", "Connection refused", "nothing was read or changed")
    assert "secret-pw" not in res.output


@pytest.mark.postgres
def test_postgres_rejects_bad_records_one_by_one_and_imports_the_rest(pg_store_url, tmp_path):
    toml = tmp_path / "endpoints.toml"
    toml.write_text(
        '[[endpoint]]\nname = "good"\nbase_url = "https://api.example.com/v1"\nmodel = "m"\n'
        f'[[endpoint]]\nname = "long-model"\nbase_url = "https://api.example.com/v1"\nmodel = "{"m" * 5000}"\n'
        '[[endpoint]]\nname = "long-region"\nbase_url = "https://api.example.com/v1"\nmodel = "m"\n'
        f'region = "{"r" * 5000}"\n'
        f'[[endpoint]]\nname = "long-url"\nbase_url = "https://api.example.com/{"p" * 5000}"\nmodel = "m"\n'
        '[[endpoint]]\nname = "nul"\nbase_url = "https://api.example.com/v1"\nmodel = "m\\u0000x"\n'
        '[[endpoint]]\nname = "good-2"\nbase_url = "https://api.example.com/v2"\nmodel = "m"\n',
        encoding="utf-8",
    )
    res = _invoke("endpoints", "import", str(toml), "--database-url", pg_store_url)
    assert res.exit_code == 1 and res.exception is None or isinstance(res.exception, SystemExit), res.output
    assert "added 2, updated 0, rejected 4" in res.stdout
    for name, why in (
        ("long-model", "model can have at most 200"),
        ("long-region", "region can have at most 120"),
        ("long-url", "base_url is"),
        ("nul", "control character"),
    ):
        assert any(name in line and why in line for line in res.stderr.splitlines()), (name, res.stderr)
    eng = open_store(pg_store_url)
    assert [e.name for e in list_endpoints(eng)] == ["good", "good-2"]
    eng.dispose()


@pytest.mark.parametrize("content", [b"\x00\x01\xff\xfe binary \x89PNG", ("a = " + "[" * 5000 + "]" * 5000).encode()])
def test_binary_or_deeply_nested_toml_is_a_clear_error(content, tmp_path, store_url):
    path = tmp_path / "endpoints.toml"
    path.write_bytes(content)
    res = _invoke("endpoints", "import", str(path), "--database-url", store_url)
    assert res.exit_code == 2 and res.exception is None or isinstance(res.exception, SystemExit), res.output
    assert "Traceback" not in res.output
    assert (
        ("not UTF-8 text" in res.stderr) or ("nested too deeply" in res.stderr) or ("not valid TOML" in res.stderr)
    ), res.stderr


@pytest.mark.parametrize(
    "args,field",
    [
        (["regions", "add", "r" * 500, "https://eu.api.acme.dev/health"], "region_id can have at most 120"),
        (
            ["regions", "add", "acme", "https://eu.api.acme.dev/health", "--city", "c" * 500],
            "city can have at most 120",
        ),
        (["regions", "add", "acme\x00x", "https://eu.api.acme.dev/health"], "control character"),
        (
            ["endpoints", "add", "eu", "--base-url", "https://api.example.com/v1", "--model", "m" * 5000],
            "model can have at most 200",
        ),
        (
            ["endpoints", "add", "eu\x00", "--base-url", "https://api.example.com/v1", "--model", "m"],
            "control character",
        ),
    ],
)
def test_long_or_nul_fields_are_refused_naming_the_field(args, field, store_url):
    res = _invoke(*args, "--database-url", store_url)
    assert res.exit_code == 2 and field in res.output, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
