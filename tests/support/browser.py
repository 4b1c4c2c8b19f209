"""How the tests and benches launch the system Chromium (Debian's; `playwright install` cannot download one here)."""

from __future__ import annotations

__all__ = ["CHROMIUM", "CHROMIUM_ARGS"]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
