"""The LiteLLM proxy's spend logs, read-only: per request its start, first token, end, model, API base and tokens.

LiteLLM writes one row per proxied call to "LiteLLM_SpendLogs" (its Prisma schema, shipped in the
litellm-proxy-extras package): `startTime`, `completionStartTime` (the first token of a streamed reply; NULL when
the proxy did not see one), `endTime`, `model`, `api_base`, `prompt_tokens`, `completion_tokens`, and cached prompt
tokens inside `metadata` (additional_usage_values.prompt_tokens_details.cached_tokens). TTFT = completionStartTime −
startTime; duration = endTime − startTime.

Reads are keyset pages in (startTime, request_id) order — the table's own index — in a read-only transaction with a
statement timeout, so a sync holds no lock but the ACCESS SHARE every SELECT takes, and never scans the table whole.
The page cursor is the start as PostgreSQL writes it (`2026-11-16 09:00:00.007`, or `infinity`), so a row dated
2999 or `infinity` is read past like any other; each row then passes planner.sources.admit (a start from 1970 to 2100
and at most a day ahead of now, timings finite and non-negative, whole counts) or is left out with the reason. A
first-token or end time of `infinity` is no first token or no end (None), never an infinite TTFT.

Time limits, so an unreachable or black-holed database is an error naming its host, never a hang:
- CONNECT_TIMEOUT_S (10 s): libpq's `connect_timeout`, connecting and signing in ("no answer within 10 s");
- TCP keepalives (a probe after 10 s idle, every 5 s, given up after 3 missed) and TCP_USER_TIMEOUT_MS (30 s: data
  sent and never acknowledged), so a server that vanishes mid-read is given up;
- STATEMENT_TIMEOUT_MS (30 s): each query, on the server.
A URL's own `connect_timeout`, `keepalives…` or `tcp_user_timeout` wins over these. A sync's total deadline is
planner.sources.sync's.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import psycopg
import sqlalchemy as sa

from planner.errors import PlannerError
from planner.inputs.urls import mask_url_password
from planner.logs.records import MAX_EPOCH_MS
from planner.sources.admit import admit, start_problem

__all__ = [
    "CONNECT_TIMEOUT_S",
    "NEEDED_COLUMNS",
    "STATEMENT_TIMEOUT_MS",
    "TABLE",
    "TCP_USER_TIMEOUT_MS",
    "LiteLLMError",
    "Page",
    "connect",
    "describe",
    "position_at",
    "read_page",
]

TABLE = "LiteLLM_SpendLogs"
NEEDED_COLUMNS = (
    "request_id",
    "startTime",
    "completionStartTime",
    "endTime",
    "model",
    "api_base",
    "prompt_tokens",
    "completion_tokens",
    "metadata",
)
STATEMENT_TIMEOUT_MS = 30_000
CONNECT_TIMEOUT_S = 10
TCP_USER_TIMEOUT_MS = 30_000
_LIBPQ_LIMITS: dict[str, int] = {
    "connect_timeout": CONNECT_TIMEOUT_S,
    "keepalives": 1,
    "keepalives_idle": 10,  # s
    "keepalives_interval": 5,  # s
    "keepalives_count": 3,
    "tcp_user_timeout": TCP_USER_TIMEOUT_MS,
}

_MS = "extract(epoch FROM {}) * 1000"  # numeric ms; ±Infinity for PostgreSQL's ±infinity (never cast to bigint)
_PAGE = f"""
SELECT request_id, "startTime"::text AS start_key, {_MS.format('"startTime"')} AS start_ms,
       CASE WHEN isfinite("completionStartTime")
            THEN {_MS.format('"completionStartTime"')} - {_MS.format('"startTime"')} END AS ttft_ms,
       CASE WHEN isfinite("endTime") THEN {_MS.format('"endTime"')} - {_MS.format('"startTime"')} END AS duration_ms,
       coalesce(model, '') AS model, coalesce(api_base, '') AS api_base,
       prompt_tokens, completion_tokens,
       CASE WHEN jsonb_typeof(metadata::jsonb #> '{{additional_usage_values,prompt_tokens_details,cached_tokens}}')
                 = 'number'
            THEN (metadata::jsonb #>> '{{additional_usage_values,prompt_tokens_details,cached_tokens}}')::numeric
       END AS cached_tokens
FROM "{TABLE}"
WHERE ("startTime", request_id) > (CAST(:after_key AS timestamp), :after_id)
ORDER BY "startTime", request_id
LIMIT :n
"""

# the first and last start a sync could keep (1970 to 2100; a year 12000 or `infinity` is no time to show)
_IN_WINDOW = """FILTER (WHERE "startTime" > 'epoch'::timestamp
                              AND "startTime" < to_timestamp(:max_epoch_ms / 1000.0) AT TIME ZONE 'UTC')"""
_FIRST = f'min("startTime") {_IN_WINDOW}'
_LAST = f'max("startTime") {_IN_WINDOW}'
_DESCRIBE = f'SELECT count(*), round({_MS.format(_FIRST)}), round({_MS.format(_LAST)}) FROM "{TABLE}"'


# psycopg's own class for a connect that ran out of time (an OperationalError saying so where it has none)
_CONNECT_TIMED_OUT = getattr(psycopg.errors, "ConnectionTimeout", psycopg.OperationalError)


class LiteLLMError(PlannerError, RuntimeError):
    """The LiteLLM database cannot be read as a spend log: unreachable, refused, or a table without the columns."""


@dataclass(frozen=True)
class Page:
    """One keyset page: the requests admitted (dicts of planner.store.sources.REQUEST_COLUMNS), the rows left out
    with why, `last`: the cursor after its last row read, admitted or not ((start as PostgreSQL writes it, request
    id); None for an empty page), and `newest`: the newest row whose start is a live request's (admitted, or left
    out for its timings or counts; (start UTC epoch ms, request id); None when none was), the only position a
    watermark may take: a row dated 2999 or `infinity` never is."""

    rows: list[dict[str, Any]]
    left_out: list[tuple[str, str]]  # (request_id, why)
    last: tuple[str, str] | None
    newest: tuple[int, str] | None = None


def connect(dsn: str) -> sa.Engine:
    """A read-only engine on the LiteLLM database (postgresql://… or postgresql+psycopg://…), with the module's
    connect timeout and TCP limits (where the URL sets none of its own). Connects on first use."""
    for scheme in ("postgresql://", "postgres://"):
        if dsn.startswith(scheme):
            dsn = "postgresql+psycopg://" + dsn.removeprefix(scheme)
    if not dsn.startswith("postgresql+psycopg://"):
        raise LiteLLMError("the LiteLLM source needs a PostgreSQL URL (postgresql://user@host/db)")
    try:
        given = set(sa.engine.make_url(dsn).query)
    except sa.exc.ArgumentError:
        raise LiteLLMError("the LiteLLM source's URL is not a database URL (postgresql://user@host/db)") from None
    limits = {k: v for k, v in _LIBPQ_LIMITS.items() if k not in given}
    engine = sa.create_engine(dsn, poolclass=sa.pool.NullPool, connect_args=limits)
    return engine.execution_options(postgresql_readonly=True)


def _begin(conn: sa.Connection) -> None:
    conn.execute(sa.text(f"SET LOCAL statement_timeout = {STATEMENT_TIMEOUT_MS}"))
    conn.execute(sa.text("SET LOCAL DateStyle = 'ISO, YMD'"))  # the cursor's start key: written, read back the same


def _where(engine: sa.Engine) -> str:
    """The database in a message: its URL without the password or the query (a query may carry `password=`,
    `sslpassword=`), bar the query's `host`, `hostaddr` and `port` (where a socket's folder goes)."""
    url = engine.url
    host = (url.host or "").rsplit("@", 1)[-1] or None  # a password with an unencoded @ is no part of the host
    query = {k: v for k, v in url.query.items() if k in ("host", "hostaddr", "port")}
    bare = sa.engine.URL.create(url.drivername, url.username, None, host, url.port, url.database, query)
    return bare.render_as_string(hide_password=False)


def _why(exc: sa.exc.SQLAlchemyError, engine: sa.Engine) -> str:
    orig = getattr(exc, "orig", exc)
    if isinstance(orig, _CONNECT_TIMED_OUT) and "timeout expired" in str(orig):
        limit_s = engine.url.query.get("connect_timeout", CONNECT_TIMEOUT_S)
        return f"{_where(engine)}: no answer within {limit_s} s (connect timeout)"
    first = str(orig).strip().splitlines()
    line = mask_url_password(first[0], engine.url.render_as_string(hide_password=False)) if first else ""
    return f"{_where(engine)}: {line or type(exc).__name__}"


def describe(engine: sa.Engine) -> dict[str, Any]:
    """What the source holds: rows, and the first and last start from 1970 to 2100 (UTC epoch ms; None for none);
    LiteLLMError naming what is wrong."""
    try:
        with engine.begin() as conn:
            _begin(conn)
            cols = {
                r[0]
                for r in conn.execute(
                    sa.text("SELECT column_name FROM information_schema.columns WHERE table_name = :t"), {"t": TABLE}
                )
            }
            if not cols:
                raise LiteLLMError(f'no table "{TABLE}" in {_where(engine)}: is this the proxy\'s database?')
            missing = [c for c in NEEDED_COLUMNS if c not in cols]
            if missing:
                raise LiteLLMError(f'"{TABLE}" has no column {", ".join(missing)}: not a LiteLLM spend log we read')
            n, first, last = conn.execute(sa.text(_DESCRIBE), {"max_epoch_ms": MAX_EPOCH_MS}).one()
    except sa.exc.SQLAlchemyError as exc:
        raise LiteLLMError(_why(exc, engine)) from None
    return {
        "rows": int(n),
        "first_ms": None if first is None else int(first),
        "last_ms": None if last is None else int(last),
    }


def position_at(ms: int) -> tuple[str, str]:
    """The cursor before every request starting at or after `ms` (UTC epoch ms, ≥ 0)."""
    at = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=max(ms, 0))
    return at.strftime("%Y-%m-%d %H:%M:%S.%f"), ""


def _number(value: Any) -> int | float | None:
    """A value read as a whole number where it is one (a count, a start in ms), else as a float (admit names it)."""
    if value is None:
        return None
    v = Decimal(value) if not isinstance(value, Decimal) else value
    if v.is_finite() and v == v.to_integral_value():
        return int(v)
    return float(v)


def read_page(engine: sa.Engine, after: tuple[str, str], n: int, now_ms: int) -> Page:
    """The next `n` rows after the cursor `after` (position_at, or a Page's `last`), admitted as of `now_ms` (UTC
    epoch ms); LiteLLMError naming the database and what went wrong."""
    try:
        with engine.begin() as conn:
            _begin(conn)
            got: Sequence[Any] = conn.execute(
                sa.text(_PAGE), {"after_key": after[0], "after_id": after[1], "n": n}
            ).all()
    except sa.exc.SQLAlchemyError as exc:
        raise LiteLLMError(_why(exc, engine)) from None
    read: list[dict[str, Any]] = []
    for r in got:
        start = _number(r.start_ms)
        read.append(
            {
                "request_id": str(r.request_id)[:200],
                "ts_ms": round(start) if isinstance(start, float) and math.isfinite(start) else start,
                "model": str(r.model)[:200],
                "api_base": str(r.api_base)[:300],
                "prompt_tokens": 0 if r.prompt_tokens is None else _number(r.prompt_tokens),
                "cached_tokens": 0 if r.cached_tokens is None else _number(r.cached_tokens),
                "output_tokens": 0 if r.completion_tokens is None else _number(r.completion_tokens),
                "ttft_ms": None if r.ttft_ms is None else float(r.ttft_ms),
                "duration_ms": None if r.duration_ms is None else float(r.duration_ms),
            }
        )
    rows, left_out = admit(read, now_ms)
    last = (str(got[-1].start_key), str(got[-1].request_id)) if got else None
    newest = max(
        ((r["ts_ms"], r["request_id"]) for r in read if start_problem(r["ts_ms"], now_ms) is None), default=None
    )
    return Page(rows, left_out, last, newest)
