"""A private PostgreSQL server for the test session (real server, never a mock).

Order of preference:
1. $TTFT_PLANNER_TEST_PG_URL, if set (a server someone else runs);
2. a throwaway cluster made with the system's initdb in a temp dir (on /dev/shm where it has room: a cluster on
   tmpfs never waits for a disk), on a free port, with its socket in that dir (run as the `postgres` user when we
   are root);
3. if no initdb exists, the test is skipped with the reason, except under CI=true, where it fails.

Databases for tests are copies of a template (`CREATE DATABASE … TEMPLATE`): the empty `template0`, or a template
the session migrated once (`make_template`), so a test never re-runs the migration chain. `drop_database` removes a
test's copy afterwards, so the cluster does not grow over a run.
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


#: A cluster goes to /dev/shm when it has at least this much free (a container's default 64 MB does not).
_SHM_MIN_FREE_BYTES = 1 << 30


def _cluster_parent() -> str | None:
    """/dev/shm when it is a roomy tmpfs, else None (the default temp dir)."""
    try:
        st = os.statvfs("/dev/shm")
    except OSError:
        return None
    return "/dev/shm" if st.f_bavail * st.f_frsize >= _SHM_MIN_FREE_BYTES and os.access("/dev/shm", os.W_OK) else None


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
        self._dir = Path(tempfile.mkdtemp(prefix="ttft-pg-", dir=_cluster_parent()))
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

    def _admin(self, *statements: str) -> None:
        import psycopg

        assert self.url is not None
        with psycopg.connect(self.url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as conn:
            for sql in statements:
                conn.execute(sql)

    def url_of(self, name: str) -> str:
        assert self.url is not None
        return self.url.rsplit("/", 1)[0] + f"/{name}"

    def fresh_database(self, name: str, template: str = "template0") -> str:
        """Create database `name` as a copy of `template` (default: empty) and return its URL."""
        self._admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        return self.url_of(name)

    def make_template(self, name: str, build) -> str:
        """Database `name`, made by `build(url)` once, for fresh_database(…, template=name) to copy. `build` must
        close its connections (a template being accessed cannot be copied)."""
        url = self.fresh_database(name)
        build(url)
        return name

    def drop_database(self, name: str) -> None:
        """Drop a test's database, ending any session a test left open on it."""
        self._admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        if self._dir is None or self._bin is None:
            return
        try:
            self._run(str(self._bin / "pg_ctl"), "-D", str(self._dir / "data"), "-m", "immediate", "-w", "stop")
        except (subprocess.SubprocessError, OSError):
            pass
        for _ in range(50):  # pg_ctl -w waits for this already; when pg_ctl itself failed, give the server 5 s
            if not (self._dir / "data" / "postmaster.pid").exists():
                break
            time.sleep(0.1)  # a server process of its own: its pid file is all there is to watch
        shutil.rmtree(self._dir, ignore_errors=True)
