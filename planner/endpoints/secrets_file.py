"""API keys from Streamlit's secrets files, for processes that are not Streamlit (the worker, the CLI).

Keys are looked up by the name an endpoint gives (`api_key_env`): first in the
environment, then as a top-level key of `.streamlit/secrets.toml` in the working
directory, then of `~/.streamlit/secrets.toml` — the same files and precedence
Streamlit uses. Values are returned to the caller and never logged or stored.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

__all__ = ["lookup_key", "secrets_paths"]

_cache: dict[Path, tuple[float, dict[str, str]]] = {}


def secrets_paths() -> list[Path]:
    """The secrets files in precedence order (the project's first)."""
    return [Path.cwd() / ".streamlit" / "secrets.toml", Path.home() / ".streamlit" / "secrets.toml"]


def _read(path: Path) -> dict[str, str]:
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return {}
    cached = _cache.get(path)
    if cached and cached[0] == mtime:
        return cached[1]
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError):
        data = {}  # an unreadable secrets file is the same as none; the endpoint then shows "key missing"
    flat = {k: str(v) for k, v in data.items() if isinstance(v, (str, int))}
    _cache[path] = (mtime, flat)
    return flat


def lookup_key(name: str) -> str | None:
    """The value of `name` from the environment or a secrets file, or None when unset/empty."""
    if not name:
        return None
    if os.environ.get(name):
        return os.environ[name]
    for path in secrets_paths():
        value = _read(path).get(name)
        if value:
            return value
    return None
