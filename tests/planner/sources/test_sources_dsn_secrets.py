"""A LiteLLM source's database URL carries its password in every form libpq accepts: in the userinfo, as `?password=`,
as `?sslpassword=`, percent-encoded, or holding an unencoded `@` (libpq and SQLAlchemy then read the rest of it as
the host, and the driver's error quotes that host). None of them may reach `sources test/sync/list`'s output, the
source's stored last error, or the worker's record of a failed sync. A real PostgreSQL throughout."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from planner.cli import cli
from planner.sources.sync import sync_source
from planner.store.sources import SourceKind, add_source, get_source
from tests.support.secret_forms import leaks

pytestmark = pytest.mark.postgres


def _dsns(empty_db_url: str) -> dict[str, tuple[str, list[str]]]:
    """Each credential form: (the URL, the secrets it carries). The database exists and has no LiteLLM table (the
    server trusts every sign-in, so a password is read and ignored): Test and sync fail with a message naming it."""
    base = empty_db_url.replace("postgresql+psycopg://", "postgresql://")
    user_host, db = base.removeprefix("postgresql://").split("/", 1)
    user, host = user_host.split("@")
    return {
        "userinfo": (f"postgresql://{user}:Upw-7f3e9a1c@{host}/{db}", ["Upw-7f3e9a1c"]),
        "query password": (f"{base}?password=Qpw-5b8d2e4f&application_name=planner", ["Qpw-5b8d2e4f"]),
        "query sslpassword": (f"{base}?sslpassword=Spw-9c1a7e3b", ["Spw-9c1a7e3b"]),
        "percent-encoded": (f"{base}?password=Ppw%2F6d4c%2B2a1", ["Ppw/6d4c+2a1", "Ppw%2F6d4c%2B2a1"]),
        # the driver reads "Hidden7f3e9a1c@127.0.0.1" as the host, fails to resolve it and says so
        "unencoded @": (f"postgresql://{user}:pw@Hidden7f3e9a1c@{host}/{db}", ["Hidden7f3e9a1c"]),
    }


@pytest.fixture
def empty_db(pg_url) -> str:
    return pg_url


@pytest.mark.parametrize("form", ["userinfo", "query password", "query sslpassword", "percent-encoded", "unencoded @"])
def test_no_credential_form_of_a_dsn_is_printed_or_kept(sqlite_store_url, empty_db, monkeypatch, form):
    dsn, secrets = _dsns(empty_db)[form]
    monkeypatch.setenv("LITELLM_DSN", dsn)
    run = lambda *a: CliRunner().invoke(cli, ["sources", *a, "--database-url", sqlite_store_url])  # noqa: E731
    said = []
    added = run("add", "prod", "--litellm-dsn-env", "LITELLM_DSN")
    assert added.exit_code == 0, added.output
    for args, code in ((("test", "prod"), 1), (("sync", "prod"), 1), (("list",), 0), (("list", "--json"), 0)):
        res = run(*args)
        said.append(res.output)
        assert res.exit_code == code, (args, res.output)
    assert "prod:" in said[0] and ("LiteLLM_SpendLogs" in said[0] or "resolve" in said[0]), said[0]
    assert "error:" in said[2], "the failed sync is listed with its error"
    assert json.loads(said[3].splitlines()[0])["last_error"]  # JSON Lines: the one source
    with sa.create_engine(sqlite_store_url).connect() as conn:
        kept = " ".join(str(v) for r in conn.execute(sa.text("SELECT * FROM source")) for v in r)
    assert not leaks("\n".join(said), secrets), said
    assert not leaks(kept, secrets), kept


@pytest.mark.parametrize("form", ["query password", "query sslpassword", "unencoded @"])
def test_a_failed_sync_keeps_no_secret_in_the_source_s_last_error(engine, empty_db, monkeypatch, form):
    """What the worker and the Sources page's Sync now record: sync_source's error, kept on the source."""
    dsn, secrets = _dsns(empty_db)[form]
    monkeypatch.setenv("LITELLM_TEST_DSN", dsn)
    add_source(engine, "prod", SourceKind.LITELLM, "LITELLM_TEST_DSN")
    with pytest.raises(Exception) as raised:
        sync_source(engine, get_source(engine, "prod"))
    kept = get_source(engine, "prod").last_error or ""
    assert kept and not leaks(kept, secrets), kept
    assert str(raised.value)  # what the caller logs: see the report on planner/worker/source_syncs.py
