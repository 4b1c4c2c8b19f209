"""A private PostgreSQL server for the test session (real server, never a mock).

Order of preference:
1. $TTFT_PLANNER_TEST_PG_URL, if set (a server someone else runs);
2. a throwaway cluster made with the system's initdb in a temp dir, on a free
   port, with its socket in that dir (run as the `postgres` user when we are root);
3. if no initdb exists, the test is skipped with the reason, except under CI=true, where it fails.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

__all__ = ["PostgresServer", "find_pg_bin"]


def find_pg_bin() -> Path | None:
    """Directory holding initdb/pg_ctl (Debian puts them under /usr/lib/postgresql/<v>/bin)."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0,
    )
    if found:
        return Path(found[-1]).parent
    for tool in ("initdb", "pg_ctl", "createdb"):
        if not shutil.which(tool):
            return None
    return Path(shutil.which("initdb")).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """Start with .start(), get .url, stop with .stop()."""

    def __init__(self) -> None:
        self.url: str | None = None
        self._dir: Path | None = None
        self._bin: Path | None = None
        self._as_postgres = os.geteuid() == 0

    def _run(self, *args: str) -> subprocess.CompletedProcess:
        cmd = list(args)
        if self._as_postgres:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=120)

    def start(self) -> str:
        env_url = os.environ.get("TTFT_PLANNER_TEST_PG_URL")
        if env_url:
            self.url = env_url
            return env_url
        self._bin = find_pg_bin()
        if self._bin is None:
            raise RuntimeError("PostgreSQL is not installed (no initdb); run `make deps` or apt-get install postgresql")
        self._dir = Path(tempfile.mkdtemp(prefix="ttft-pg-"))
        if self._as_postgres:
            shutil.chown(self._dir, "postgres", "postgres")
        data = self._dir / "data"
        port = _free_port()
        self._run(
            str(self._bin / "initdb"), "-D", str(data), "-U", "planner", "--auth=trust", "-E", "UTF8", "--no-sync"
        )
        self._run(
            str(self._bin / "pg_ctl"),
            "-D",
            str(data),
            "-l",
            str(self._dir / "log"),
            "-w",
            "-t",
            "60",
            "-o",
            f"-p {port} -k {self._dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200",
            "start",
        )
        self._run(str(self._bin / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "planner", "planner")
        self.url = f"postgresql+psycopg://planner@127.0.0.1:{port}/planner"
        return self.url

    def fresh_database(self, name: str) -> str:
        """Create an empty database on this server and return its URL."""
        import psycopg

        assert self.url is not None
        base = self.url.replace("postgresql+psycopg://", "postgresql://")
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url.rsplit("/", 1)[0] + f"/{name}"

    def stop(self) -> None:
        if self._dir is None or self._bin is None:
            return
        try:
            self._run(str(self._bin / "pg_ctl"), "-D", str(self._dir / "data"), "-m", "immediate", "-w", "stop")
        except (subprocess.SubprocessError, OSError):
            pass
        for _ in range(50):
            if not (self._dir / "data" / "postmaster.pid").exists():
                break
            time.sleep(0.1)
        shutil.rmtree(self._dir, ignore_errors=True)
