"""The LiteLLM proxy's spend logs, read-only: per request its start, first token, end, model, API base and tokens.

LiteLLM writes one row per proxied call to "LiteLLM_SpendLogs" (its Prisma schema, shipped in the
litellm-proxy-extras package): `startTime`, `completionStartTime` (the first token of a streamed reply; NULL when
the proxy did not see one), `endTime`, `model`, `api_base`, `prompt_tokens`, `completion_tokens`, and cached prompt
tokens inside `metadata` (additional_usage_values.prompt_tokens_details.cached_tokens). TTFT = completionStartTime −
startTime; duration = endTime − startTime.

Reads are keyset pages in (startTime, request_id) order — the table's own index — in a read-only transaction with a
statement timeout, so a sync holds no lock but the ACCESS SHARE every SELECT takes, and never scans the table whole.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from planner.errors import PlannerError
from planner.store.engine import redacted

__all__ = ["NEEDED_COLUMNS", "TABLE", "LiteLLMError", "Page", "connect", "describe", "read_page"]

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
_MAX_TOKENS = 1_000_000_000  # planner.logs.records.MAX_TOKENS: a larger count is not a count

_PAGE = f"""
SELECT request_id, (extract(epoch FROM "startTime") * 1000)::bigint AS start_ms,
       extract(epoch FROM "completionStartTime") * 1000 - extract(epoch FROM "startTime") * 1000 AS ttft_ms,
       extract(epoch FROM "endTime") * 1000 - extract(epoch FROM "startTime") * 1000 AS duration_ms,
       coalesce(model, '') AS model, coalesce(api_base, '') AS api_base,
       prompt_tokens, completion_tokens,
       CASE WHEN jsonb_typeof(metadata::jsonb #> '{{additional_usage_values,prompt_tokens_details,cached_tokens}}')
                 = 'number'
            THEN (metadata::jsonb #>> '{{additional_usage_values,prompt_tokens_details,cached_tokens}}')::numeric
       END AS cached_tokens
FROM "{TABLE}"
WHERE ("startTime", request_id) > (to_timestamp(:after_ms / 1000.0) AT TIME ZONE 'UTC', :after_id)
ORDER BY "startTime", request_id
LIMIT :n
"""


class LiteLLMError(PlannerError, RuntimeError):
    """The LiteLLM database cannot be read as a spend log: unreachable, refused, or a table without the columns."""


@dataclass(frozen=True)
class Page:
    """One keyset page: the requests (dicts of planner.store.sources.REQUEST_COLUMNS), rows left out with why, and
    the position after its last row."""

    rows: list[dict[str, Any]]
    left_out: list[tuple[str, str]]  # (request_id, why)
    last: tuple[int, str] | None


def connect(dsn: str) -> sa.Engine:
    """A read-only engine on the LiteLLM database (postgresql://… or postgresql+psycopg://…)."""
    for scheme in ("postgresql://", "postgres://"):
        if dsn.startswith(scheme):
            dsn = "postgresql+psycopg://" + dsn.removeprefix(scheme)
    url = dsn
    if not url.startswith("postgresql+psycopg://"):
        raise LiteLLMError("the LiteLLM source needs a PostgreSQL URL (postgresql://user@host/db)")
    return sa.create_engine(url, poolclass=sa.pool.NullPool).execution_options(postgresql_readonly=True)


def _begin(conn: sa.Connection) -> None:
    conn.execute(sa.text(f"SET LOCAL statement_timeout = {STATEMENT_TIMEOUT_MS}"))


def describe(engine: sa.Engine) -> dict[str, Any]:
    """What the source holds: rows, first and last start (UTC epoch ms); LiteLLMError naming what is wrong."""
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
                raise LiteLLMError(f'no table "{TABLE}" in {redacted(str(engine.url))}: is this the proxy\'s database?')
            missing = [c for c in NEEDED_COLUMNS if c not in cols]
            if missing:
                raise LiteLLMError(f'"{TABLE}" has no column {", ".join(missing)}: not a LiteLLM spend log we read')
            n, first, last = conn.execute(
                sa.text(
                    f'SELECT count(*), (extract(epoch FROM min("startTime")) * 1000)::bigint, '
                    f'(extract(epoch FROM max("startTime")) * 1000)::bigint FROM "{TABLE}"'
                )
            ).one()
    except sa.exc.SQLAlchemyError as exc:
        raise LiteLLMError(_why(exc, engine)) from None
    return {"rows": int(n), "first_ms": first, "last_ms": last}


def _why(exc: sa.exc.SQLAlchemyError, engine: sa.Engine) -> str:
    first = str(getattr(exc, "orig", exc)).strip().splitlines()
    return f"{redacted(str(engine.url))}: {first[0] if first else type(exc).__name__}"


def _count(value: Any) -> int | None:
    if value is None:
        return 0
    v = float(value)
    return int(v) if math.isfinite(v) and v == int(v) and 0 <= v <= _MAX_TOKENS else None


def read_page(engine: sa.Engine, after: tuple[int, str], n: int) -> Page:
    """The next `n` requests after `after` = (start ms, request id)."""
    try:
        with engine.begin() as conn:
            _begin(conn)
            got: Sequence[Any] = conn.execute(
                sa.text(_PAGE), {"after_ms": after[0], "after_id": after[1], "n": n}
            ).all()
    except sa.exc.SQLAlchemyError as exc:
        raise LiteLLMError(_why(exc, engine)) from None
    rows, left_out = [], []
    for r in got:
        prompt, output, cached = _count(r.prompt_tokens), _count(r.completion_tokens), _count(r.cached_tokens)
        if prompt is None or output is None or cached is None or cached > prompt:
            left_out.append((r.request_id, "a token count that is not a whole number from 0 to 10⁹ (cached ≤ prompt)"))
            continue
        ttft = None if r.ttft_ms is None or r.ttft_ms < 0 else float(r.ttft_ms)
        duration = None if r.duration_ms is None or r.duration_ms < 0 else float(r.duration_ms)
        rows.append(
            {
                "request_id": str(r.request_id)[:200],
                "ts_ms": int(r.start_ms),
                "model": str(r.model)[:200],
                "api_base": str(r.api_base)[:300],
                "prompt_tokens": prompt,
                "cached_tokens": cached,
                "output_tokens": output,
                "ttft_ms": ttft,
                "duration_ms": duration,
            }
        )
    last = (int(got[-1].start_ms), str(got[-1].request_id)) if got else None
    return Page(rows, left_out, last)
