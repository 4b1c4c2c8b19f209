"""A migrated SQLite store to copy: the migration chain runs once per test process, not once per test.

`migrated_sqlite(dest)` copies it to `dest` (a planner.db, or a data directory's planner.db), which a test then
opens as users do: open_store finds the newest revision and migrates nothing. Tests of the migration chain itself
start from an empty file instead (the `sqlite_url` fixture).
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import threading
from pathlib import Path

__all__ = ["migrated_sqlite", "seed_data_dir"]

_lock = threading.Lock()
_template: Path | None = None


def _template_file() -> Path:
    global _template
    with _lock:
        if _template is None:
            from planner.store import open_store

            folder = Path(tempfile.mkdtemp(prefix="ttft-store-template-"))
            atexit.register(shutil.rmtree, folder, True)
            path = folder / "planner.db"
            engine = open_store(f"sqlite:///{path}")
            with engine.connect() as conn:  # everything into the main file: the copy takes no -wal beside it
                conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
            engine.dispose()
            _template = path
        return _template


def migrated_sqlite(dest: Path) -> str:
    """Copy the migrated store to `dest` (its folder is made) and return its URL."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_template_file(), dest)
    return f"sqlite:///{dest}"


def seed_data_dir(data_dir: Path) -> Path:
    """A data directory (TTFT_PLANNER_DATA_DIR) whose default store is already migrated; returns the folder."""
    migrated_sqlite(data_dir / "planner.db")
    return data_dir
