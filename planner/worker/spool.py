"""The local spool: probe rows the worker could not store before it stopped, replayed on the next start.

When the database is down, locked or full at shutdown, the worker waits a
bounded time for its last flush and writes whatever is still unsaved here, as
JSON Lines, one file per worker process, next to the database
(``<file>.db.spool/`` for SQLite; ``<data dir>/spool/<url digest>/`` for
PostgreSQL). Any worker of that database replays every spool file when it
starts: it first renames the file (so two starting workers never replay the
same file), inserts its rows with planner.store.probes.insert_samples, which
is idempotent per slot, and deletes the file; a replay that fails puts the
file back for the next start. Rows of endpoints removed meanwhile are dropped.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import uuid
from pathlib import Path

from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from planner.pids import pid_alive
from planner.store.database import data_dir, redacted, sqlite_file, table_of
from planner.store.probes import ProbeSampleRow, insert_samples
from planner.store.worker import missing_endpoints

__all__ = ["replay", "spool_dir", "write"]

log = logging.getLogger("planner.worker")

_COLS = [c.name for c in table_of(ProbeSampleRow).columns if c.name != "id"]


def spool_dir(engine: Engine) -> Path:
    """Where the spool files of this database live."""
    path = sqlite_file(engine.url)
    if path is not None:
        return path.with_name(path.name + ".spool")
    digest = hashlib.sha1(redacted(str(engine.url)).encode()).hexdigest()[:12]
    return data_dir() / "spool" / digest


def write(engine: Engine, rows: list[ProbeSampleRow]) -> Path | None:
    """Append `rows` to a new spool file (fsynced); returns its path (None for no rows). Raises OSError."""
    if not rows:
        return None
    folder = spool_dir(engine)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{os.getpid()}-{uuid.uuid4().hex[:8]}.jsonl"
    tmp = path.with_suffix(".writing")  # renamed when complete: a replay never reads a file half-written
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            for r in rows:
                fh.write(json.dumps({c: getattr(r, c) for c in _COLS}) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)  # a full disk: the part written would only take space no replay reads
        raise
    return path


def _reclaim_abandoned(folder: Path) -> None:
    """Files a replaying worker claimed and then died on (kill -9 mid-replay) go back in the queue."""
    for claimed in folder.glob("*.jsonl.replaying-*"):
        pid = claimed.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not pid_alive(int(pid)):
            claimed.rename(claimed.with_name(claimed.name.split(".replaying-")[0]))


def _rows(path: Path) -> list[ProbeSampleRow]:
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append(ProbeSampleRow(**{c: v for c, v in json.loads(line).items() if c in _COLS}))
        except (ValueError, TypeError) as exc:  # a line cut by a crash mid-write
            log.warning("spool %s line %d unreadable, skipped: %s", path.name, n, exc)
    return out


def replay(engine: Engine) -> int:
    """Insert every spooled row (idempotently) and delete the spool files; returns rows newly stored.

    Database errors propagate after putting the file being replayed back."""
    folder = spool_dir(engine)
    if not folder.is_dir():
        return 0
    _reclaim_abandoned(folder)
    stored = 0
    for path in sorted(folder.glob("*.jsonl")):
        claimed = path.with_name(path.name + f".replaying-{os.getpid()}")
        try:
            path.rename(claimed)
        except FileNotFoundError:  # another worker claimed it first
            continue
        try:
            rows = _rows(claimed)
            if rows:
                gone = missing_endpoints(engine, {r.endpoint_id for r in rows})
                rows = [r for r in rows if r.endpoint_id not in gone]
                try:
                    stored += insert_samples(engine, rows)
                except IntegrityError:  # an endpoint removed between the check and the insert
                    gone = missing_endpoints(engine, {r.endpoint_id for r in rows})
                    stored += insert_samples(engine, [r for r in rows if r.endpoint_id not in gone])
        except BaseException:
            claimed.rename(path)
            raise
        claimed.unlink()
        log.info("replayed spool file %s (%d rows)", path.name, len(rows))
    return stored
