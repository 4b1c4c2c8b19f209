"""Every setting the planner reads from its environment, in one table of (name, default, help).

The planner has no configuration file of its own: a process is configured by these environment variables, by command
line flags (`ttft-planner CMD --help`) and by Streamlit's own `.streamlit/` files (API keys in `secrets.toml`, read by
`planner.endpoints.secrets_file`). Code reads a variable through its `Setting` here, never by spelling the name again,
and `tests/test_docs.py` fails when a row is missing from the settings table in docs/settings.md.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = [
    "DEFAULT_VANTAGE_NAME",
    "DATABASE_URL",
    "DATA_DIR",
    "MATRIX_CELLS",
    "MATRIX_ROWS",
    "MAX_HELD_ROWS",
    "METRICS_PORT",
    "MIN_INTERVAL_S",
    "PUBLIC_URL",
    "RETENTION_DAYS",
    "ROLES_FILE",
    "SETTINGS",
    "SMTP_FROM",
    "SMTP_HOST",
    "SMTP_PASSWORD",
    "SMTP_PORT",
    "SMTP_STARTTLS",
    "SMTP_USER",
    "TEST_PG_URL",
    "VANTAGE",
    "vantage_name",
    "Setting",
]


@dataclass(frozen=True)
class Setting:
    """One environment variable: its name, its default as documented (what applies when it is unset) and its help."""

    name: str
    default: str
    help: str

    def raw(self) -> str | None:
        """The variable's value, or None when it is unset or empty (an empty value means the default)."""
        return os.environ.get(self.name) or None


DATABASE_URL = Setting(
    "TTFT_PLANNER_DATABASE_URL",
    "SQLite under the data directory",
    "SQLAlchemy URL of the store (sqlite:///<data dir>/planner.db by default; postgresql+psycopg://user:…@host/db "
    "for teams); every CLI command's --database-url overrides it. The password never appears in messages.",
)
DATA_DIR = Setting(
    "TTFT_PLANNER_DATA_DIR",
    "$XDG_DATA_HOME/ttft-planner",
    "Directory of the default SQLite file and the files beside it (migration lock, worker state, spool); "
    "$XDG_DATA_HOME defaults to ~/.local/share.",
)
VANTAGE = Setting(
    "TTFT_PLANNER_VANTAGE",
    '"": the one default vantage',
    "Name of where this machine measures from (office, region), stored with every sample of the worker, "
    "`probe --store`, `sweep --store` and server-side RTT probes; the --vantage flag overrides it.",
)
#: How the one default vantage ("", no TTFT_PLANNER_VANTAGE) is named wherever a reader sees it.
DEFAULT_VANTAGE_NAME = "this server (default vantage)"


def vantage_name(vantage: object) -> str:
    """A vantage as a reader sees it: its label, or DEFAULT_VANTAGE_NAME for "" (and None or NaN from a frame)."""
    if vantage is None or (isinstance(vantage, float) and vantage != vantage) or vantage == "":
        return DEFAULT_VANTAGE_NAME
    return str(vantage)


RETENTION_DAYS = Setting(
    "TTFT_PLANNER_RETENTION_DAYS",
    "90",
    "Days of raw probe samples to keep; older ones are rolled up hourly. A number from 0.01 to 36,500 (inf, nan "
    "and 0 are refused, naming the variable); `worker --retention-days` overrides it.",
)
MIN_INTERVAL_S = Setting(
    "TTFT_PLANNER_MIN_INTERVAL_S",
    "10",
    "Smallest accepted probe interval in seconds (never below 0.2). For tests and local simulators only: a real "
    "provider bills every probe.",
)
TEST_PG_URL = Setting(
    "TTFT_PLANNER_TEST_PG_URL",
    "a throwaway initdb cluster",
    "Tests only: a PostgreSQL URL the store tests use instead of starting their own server.",
)
MATRIX_ROWS = Setting(
    "TTFT_PLANNER_MATRIX_ROWS",
    "3000",
    "Tests only: the requests in each cell of the log reader's defect matrix (tests/planner/logs/test_logs_matrix.py).",
)
MATRIX_CELLS = Setting(
    "TTFT_PLANNER_MATRIX_CELLS",
    "quick",
    "Tests only: which cells of the defect matrix run (quick, cover or all).",
)

PUBLIC_URL = Setting(
    "TTFT_PLANNER_PUBLIC_URL",
    "http://localhost:8501",
    "Where the team reaches the dashboard; alert notifications link to its Probes page (`serve` sets it to the "
    "port it serves on when unset).",
)
ROLES_FILE = Setting(
    "TTFT_PLANNER_ROLES_FILE",
    ".streamlit/roles.toml",
    "With sign-in on: the roles file mapping e-mail addresses, domains or an OIDC claim to viewer/editor/admin.",
)
METRICS_PORT = Setting(
    "TTFT_PLANNER_METRICS_PORT",
    "off",
    "Port on which `worker` serves Prometheus /metrics (or --metrics-port); unset: no metrics server.",
)
MAX_HELD_ROWS = Setting(
    "TTFT_PLANNER_MAX_HELD_ROWS",
    "50000",
    "Probe rows a worker holds in memory while the store refuses them (locked, full, down), retried every flush; "
    "past it the oldest are dropped and counted on the Probes page and in /metrics. A whole number from 1 to "
    "10,000,000 (about 1.7 KB of memory a row); `worker --max-held-rows` overrides it.",
)
SMTP_HOST = Setting("TTFT_PLANNER_SMTP_HOST", "unset: no e-mail", "SMTP server for alert e-mails.")
SMTP_PORT = Setting("TTFT_PLANNER_SMTP_PORT", "25", "SMTP port (587 with STARTTLS).")
SMTP_STARTTLS = Setting("TTFT_PLANNER_SMTP_STARTTLS", "0", "1 to upgrade the SMTP connection with STARTTLS.")
SMTP_USER = Setting("TTFT_PLANNER_SMTP_USER", "unset: no login", "SMTP login user.")
SMTP_PASSWORD = Setting("TTFT_PLANNER_SMTP_PASSWORD", "unset", "SMTP login password (read from the environment only).")
SMTP_FROM = Setting("TTFT_PLANNER_SMTP_FROM", "ttft-planner@localhost", "Sender address of alert e-mails.")

#: Every setting, in the order of the table in docs/settings.md.
SETTINGS: tuple[Setting, ...] = (
    DATABASE_URL,
    DATA_DIR,
    VANTAGE,
    RETENTION_DAYS,
    MIN_INTERVAL_S,
    TEST_PG_URL,
    MATRIX_ROWS,
    MATRIX_CELLS,
    PUBLIC_URL,
    ROLES_FILE,
    METRICS_PORT,
    MAX_HELD_ROWS,
    SMTP_HOST,
    SMTP_PORT,
    SMTP_STARTTLS,
    SMTP_USER,
    SMTP_PASSWORD,
    SMTP_FROM,
)
