"""The LiteLLM reader (planner.sources.sync.sync_source over planner.sources.litellm.read_page) against a real
PostgreSQL holding LiteLLM's own spend-log table (the test gives the Proxy: the session's server, LiteLLM's schema).

Each case sets the table to GOOD real requests and, for a value, one row per column that can hold it (`row_slots`:
the cached tokens inside `metadata`, the whole `metadata`, the token counts, the model, the API base); for a time, a
row starting then, one whose first token is then and one ending then. A sync into a fresh source of the Env's SQLite
store is READ when it stored every good row and nothing insane (the watermark included), REFUSED when it also left
rows out with their reasons, or when it failed with one LiteLLMError line. A database URL carrying its password in
one of libpq's forms, a black hole and a port that never accepts are syncs that fail: their one line, the source's
recorded error and the log must hold no password.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from typing import Any
from urllib.parse import quote

import psycopg
import sqlalchemy as sa

from planner.errors import PlannerError
from planner.sources.sync import sync_source
from planner.store.sources import SourceKind, add_source, get_source, load_source_requests
from tests.support.hostile.corpus import DSN_PASSWORD, HOLE, Case, embed
from tests.support.hostile.outcome import READ, REFUSED, WRONG, Env, Outcome, logged_failures, one_line, sane_number

__all__ = ["Proxy", "litellm_accepts", "litellm_sync", "row_slots"]

T0_S = int(dt.datetime(2026, 11, 16, 9, tzinfo=dt.UTC).timestamp())
NOW_MS = (T0_S + 3600) * 1000
GOOD = 5
_INT4 = 2**31
_DAY_MS = 86_400_000
_TIME = """CASE WHEN {p}::float8 IS NULL THEN NULL
  WHEN {p}::float8 > 9e12 THEN 'infinity'::timestamp WHEN {p}::float8 < -9e12 THEN '-infinity'::timestamp
  ELSE to_timestamp({p}::float8) AT TIME ZONE 'UTC' END"""
_INSERT = f"""INSERT INTO "LiteLLM_SpendLogs" (request_id, call_type, "startTime", "completionStartTime", "endTime",
  model, api_base, prompt_tokens, completion_tokens, total_tokens, metadata)
VALUES (%(id)s, 'acompletion', {_TIME.format(p="%(start)s")}, {_TIME.format(p="%(first)s")},
  {_TIME.format(p="%(end)s")}, %(model)s, %(api_base)s, %(prompt)s, %(output)s, 0, %(metadata)s::jsonb)"""


class Proxy:
    """The LiteLLM proxy's database at `dsn` (postgresql://user:password@…), its table rewritten per case."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn

    def reset(self, rows: list[dict[str, Any]]) -> None:
        """The table holds `rows` alone (times in epoch seconds: any size, past PostgreSQL's range is infinity)."""
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute('TRUNCATE "LiteLLM_SpendLogs"')
            with conn.cursor() as cur:
                cur.executemany(_INSERT, rows)

    def with_password(self, form: str, database: str = "no_such_database") -> str:
        """This server's URL to a database that is not there, carrying DSN_PASSWORD in libpq form `form`."""
        url = sa.engine.make_url(self.dsn).set(database=database, password=None)
        bare = url.render_as_string(hide_password=False)
        scheme, rest = bare.split("://", 1)
        user, _, host = rest.partition("@")
        join = "&" if "?" in bare else "?"
        if form == "userinfo":
            return f"{scheme}://{user}:{quote(DSN_PASSWORD, safe='')}@{host}"
        if form == "an unencoded @":
            return f"{scheme}://{user}:{quote(DSN_PASSWORD, safe='=+')}@x@{host}"
        key = "password" if form == "password= in the query" else "sslpassword"
        return f"{bare}{join}{key}={quote(DSN_PASSWORD, safe='')}"


def litellm_accepts(case: Case) -> bool:
    return case.role in ("value", "time", "behaviour", "dsn")


def _row(n: int, start: float | None = None, **over: Any) -> dict[str, Any]:
    start = T0_S + n if start is None else start
    meta = {"additional_usage_values": {"prompt_tokens_details": {"cached_tokens": 10}}}
    row = {
        "id": f"chatcmpl-{n:06d}",
        "start": start,
        "first": start + 0.3,
        "end": start + 0.9,
        "model": "gpt-4.1-mini",
        "api_base": "https://api.openai.com/v1",
        "prompt": 1000,
        "output": 20,
        "metadata": json.dumps(meta),
    }
    return row | over


def row_slots(n: int, value: Any) -> list[dict[str, Any]]:
    """A row for each column that can hold `value`, numbered from `n`."""
    meta = {"additional_usage_values": {"prompt_tokens_details": {"cached_tokens": HOLE}}}
    rows = [_row(n, metadata=embed(meta, value)), _row(n + 1, metadata=embed(HOLE, value))]
    if isinstance(value, int) and not isinstance(value, bool) and -_INT4 <= value < _INT4:
        rows += [_row(n + 2, prompt=value), _row(n + 3, output=value)]
    if isinstance(value, str):
        rows += [_row(n + 4, model=value), _row(n + 5, api_base=value)]
    return rows


def _rows(case: Case) -> list[dict[str, Any]]:
    good = [_row(i) for i in range(GOOD)]
    if case.role == "value":
        return good + row_slots(100, case.value)
    t = case.epoch_s
    assert t is not None
    return good + [_row(100, t), _row(101, first=t), _row(102, end=t)]


def _dsn(case: Case, env: Env, deadline_s: float) -> str:
    assert env.proxy is not None
    if case.role == "dsn":
        return env.proxy.with_password(str(case.dsn_form))
    port = env.black_hole.port if case.behaviour == "black_hole" else env.never_accepts
    limit = max(2, round(deadline_s))  # libpq's least connect timeout
    return f"postgresql://reader:{quote(DSN_PASSWORD, safe='')}@127.0.0.1:{port}/spend?connect_timeout={limit}"


def _sync(env: Env, dsn: str, deadline_s: float) -> tuple[Any, str, list[str], list[str]]:
    """(the sync's report or its PlannerError, the source's name, what was logged, what of it says a bug)."""
    variable = "HOSTILE_CORPUS_LITELLM_DSN"
    os.environ[variable] = dsn
    name = env.name("litellm")
    add_source(env.store, name, SourceKind.LITELLM, variable)
    source = get_source(env.store, name)
    mark = env.log_mark()
    try:
        report: Any = sync_source(env.store, source, now_ms=NOW_MS, deadline_s=deadline_s)
    except PlannerError as exc:
        report = exc
    finally:
        del os.environ[variable]
    records = env.logged_since(mark)
    return report, source.name, [r.getMessage() for r in records], logged_failures(records)


def _problems(env: Env, source: str, rows: list[dict[str, Any]]) -> list[str]:
    """What a user would notice of a sync that said it worked: a good row missing, a row or a watermark insane."""
    ids = {r["request_id"] for r in rows}
    out = [f"good row chatcmpl-{i:06d} not stored" for i in range(GOOD) if f"chatcmpl-{i:06d}" not in ids]
    for r in rows:
        times = sane_number(r["ttft_ms"], top=7 * _DAY_MS) and sane_number(r["duration_ms"], top=7 * _DAY_MS)
        counts = ("prompt_tokens", "cached_tokens", "output_tokens")
        if not (times and all(sane_number(r[c], whole=True, top=1e9) for c in counts)):
            out.append(f"stored {r!r}"[:300])
        elif not 0 <= r["ts_ms"] <= NOW_MS + _DAY_MS:
            out.append(f"stored {r!r}"[:300])
    watermark = get_source(env.store, source).watermark_ms
    if watermark is not None and not 0 <= watermark <= NOW_MS + _DAY_MS:
        out.append(f"the watermark moved to {watermark} ms")
    return out


def litellm_sync(case: Case, env: Env, deadline_s: float) -> list[Outcome]:
    """One sync of the spend log the case makes."""
    assert env.proxy is not None, "the LiteLLM reader needs the test's PostgreSQL"
    if case.role in ("dsn", "behaviour"):
        report, name, logged, bugs = _sync(env, _dsn(case, env, deadline_s), deadline_s)
    else:
        env.proxy.reset(_rows(case))
        report, name, logged, bugs = _sync(env, env.proxy.dsn, deadline_s)
    source = get_source(env.store, name)
    rows = load_source_requests(env.store, source.id)
    texts = [*logged, str(source.last_error), repr(rows)]
    if bugs:
        return [Outcome(WRONG, f"logged {bugs[:2]}", texts)]
    if isinstance(report, PlannerError):
        return [one_line(str(report), *texts)]
    texts.append(repr(report.left_out))
    problems = _problems(env, name, rows)
    if problems:
        return [Outcome(WRONG, "; ".join(problems[:3]), texts)]
    if report.left_out:
        reasons = sorted({why for _, why in report.left_out})
        if not all(reasons):
            return [Outcome(WRONG, "a row left out without a reason", texts)]
        return [Outcome(REFUSED, f"{len(report.left_out)} rows left out: {reasons[:3]}", texts)]
    return [Outcome(READ, f"{report.new} rows stored", texts)]
