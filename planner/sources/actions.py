"""What a person does with a source — Test it, Sync it now — once, for the Sources page and `ttft-planner sources`.

Both fronts call `test_source` and `sync_now` and draw what comes back: an `Outcome` of sentences (each with a level:
success, error, warning, info, caption), figures for metric cards, and the facts `--json` prints. Every sentence is
one line with the source's secrets masked (`clean`): whatever its variable holds (a database URL, a bearer token),
any credential its URL carries, in every encoding a driver's or a server's message can quote it. A database URL in a
message becomes "the database in $VAR": the URL itself is never shown. Sentences are plain text: a page escapes them
(planner.inputs.untrusted.md_text) before drawing.

Times are written by the caller's `when` (epoch ms → text: the page's viewer zone, the command's UTC).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Engine

from planner.errors import PlannerError
from planner.inputs.env_names import env_name_problem, mask_env_value, shown_env_name
from planner.inputs.urls import mask_url_password, url_host
from planner.percentiles import Percentile, summarize
from planner.sources import litellm
from planner.sources.sync import SyncReport, describe_prometheus, sync_source
from planner.store.sources import SourceInfo, SourceKind, get_source, source_ttft_ms

__all__ = ["Line", "Outcome", "clean", "sync_now", "test_source", "unusable", "where"]

# Any URL a driver's message may carry (the source's own, or SQLAlchemy's redacted form): up to white space or a
# closing parenthesis, less a trailing colon that ends the clause ("postgresql+psycopg://u:***@h:5432/db: refused").
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s()]*?(?=:?(?:[\s)]|$))")
_POSTGRES = ("postgresql://", "postgres://", "postgresql+psycopg://")


@dataclass(frozen=True)
class Line:
    """One sentence to show: `level` is success, error, warning, info or caption."""

    level: str
    text: str


@dataclass(frozen=True)
class Outcome:
    """What a Test or a Sync now found: `ok` False when it failed (the sentences say why, nothing was lost)."""

    ok: bool
    lines: tuple[Line, ...]
    figures: tuple[tuple[str, str], ...] = ()  # (label, value) for metric cards
    facts: dict[str, Any] = field(default_factory=dict)  # what --json prints (numbers, not words)
    report: SyncReport | None = None

    @property
    def first(self) -> str:
        return self.lines[0].text if self.lines else ""


def _failed(src: SourceInfo, why: str) -> Outcome:
    return Outcome(False, (Line("error", f"{src.name}: {why}"),))


def clean(message: str, src: SourceInfo) -> str:
    """`message` (from the source's database, Prometheus or a driver) on one line, with no secret of `src` in it and
    no trailing full stop."""
    text = " ".join(str(message).split())
    if src.kind is not SourceKind.PROMETHEUS:  # a database URL is never shown: it names the variable instead
        text = _URL.sub(f"the database in {shown_env_name(src.secret_ref)}", text)
    text = mask_url_password(mask_env_value(text, src.secret_ref), src.url or "")
    return text.rstrip(".")


def unusable(src: SourceInfo) -> str | None:
    """Why `src` cannot be read as it is configured — what it keeps as its variable is no variable's name (a value
    an older version stored), the variable is unset, or it does not hold a PostgreSQL URL — without showing it;
    None when it can be tried."""
    if not src.secret_ref:
        return None  # a Prometheus source without a token
    if env_name_problem(src.secret_ref, "") is not None:
        return f"{shown_env_name(src.secret_ref)}."
    value = os.environ.get(src.secret_ref, "")
    if not value:
        holds = {
            SourceKind.LITELLM: "the LiteLLM proxy's PostgreSQL URL (postgresql://user:password@host/db; a read-only "
            "role is enough)",
            SourceKind.PROMETHEUS: "Prometheus' bearer token",
            SourceKind.OTLP: "the bearer token the exporters send",
        }[src.kind]
        return (
            f"${src.secret_ref} is not set on this server: set it to {holds} where the dashboard, the worker and the "
            "commands run (a running one sees it after a restart)."
        )
    if src.kind is SourceKind.LITELLM and not value.startswith(_POSTGRES):
        return f"${src.secret_ref} does not hold a PostgreSQL URL: it should be postgresql://user:password@host/db."
    return None


def where(src: SourceInfo) -> str:
    """Where the source reads from, in words, with no secret: "Prometheus prom:9090, vllm, model m1",
    "the database in $LITELLM_DSN", "OpenTelemetry exports (bearer token from $OTEL_TOKEN)"."""
    if src.kind is SourceKind.PROMETHEUS:
        what = src.metric or src.profile or "vllm"
        return f"Prometheus {url_host(src.url or '')}, {what}, model {src.model_filter or 'every model'}"
    if src.kind is SourceKind.LITELLM:
        return f"the database in {shown_env_name(src.secret_ref)}"
    return f"OpenTelemetry exports (bearer token from {shown_env_name(src.secret_ref)})"


def _pushed(src: SourceInfo, verb: str) -> Outcome | None:
    if src.kind.pulled:
        return None
    return _failed(
        src,
        f"it receives OpenTelemetry spans (ttft-planner sources receive {src.name}, or the worker's --otlp-port): "
        f"there is nothing to {verb}",
    )


def test_source(store: Engine, src: SourceInfo, *, when: Callable[[int | None], str]) -> Outcome:
    """Connect to `src` read-only and say what it holds; nothing is stored. `store` is unused for a Test (kept so both
    actions take the same arguments)."""
    del store
    if (pushed := _pushed(src, "test")) is not None:
        return pushed
    if (problem := unusable(src)) is not None:
        return _failed(src, problem)
    if src.kind is SourceKind.PROMETHEUS:
        try:
            said = describe_prometheus(src)
        except PlannerError as exc:
            return _failed(src, clean(str(exc), src))
        return Outcome(True, (Line("success", f"{src.name}: Prometheus has {said}."),), facts={"found": said})
    try:
        reader = litellm.connect(os.environ[src.secret_ref])
        try:
            got = litellm.describe(reader)
        finally:
            reader.dispose()
    except (PlannerError, ValueError) as exc:  # ValueError: SQLAlchemy's ArgumentError, a URL it cannot open
        return _failed(src, clean(str(exc), src))
    facts = {"rows": got["rows"], "first_ms": got["first_ms"], "last_ms": got["last_ms"]}
    if not got["rows"]:
        return Outcome(
            True, (Line("success", f"{src.name}: connected; {litellm.TABLE} holds no requests yet."),), facts=facts
        )
    text = (
        f"{src.name}: {litellm.TABLE} holds {got['rows']:,} requests, first {when(got['first_ms'])}, "
        f"last {when(got['last_ms'])}."
    )
    return Outcome(True, (Line("success", text),), facts=facts)


def _ms(pc: Percentile) -> str:
    return "—" if pc.value is None else f"{pc.value:,.0f} ms"


def sync_now(
    store: Engine,
    src: SourceInfo,
    *,
    when: Callable[[int | None], str],
    page_rows: int | None = None,
    max_pages: int | None = None,
    now_ms: int | None = None,
) -> Outcome:
    """Read `src`'s new requests (a Prometheus source: its hours) into `store` (planner.sources.sync.sync_source:
    from the watermark, restart-safe), then summarise what is kept. A failure keeps everything stored before it; the
    next sync goes on from there. `max_pages` bounds one call (the page: one click); None reads to the newest."""
    del when  # the sentences carry no time today; kept so Test and Sync take the same arguments
    if (pushed := _pushed(src, "sync")) is not None:
        return pushed
    if (problem := unusable(src)) is not None:
        return _failed(src, problem)
    kw: dict[str, Any] = {"max_pages": max_pages, "now_ms": now_ms}
    if page_rows is not None:
        kw["page_rows"] = page_rows
    try:
        rep = sync_source(store, src, **kw)
    except (PlannerError, ValueError) as exc:
        return _failed(src, f"{clean(str(exc), src)}; what was read before is kept, and the next sync goes on")
    kept = get_source(store, src.name)
    if src.kind is SourceKind.PROMETHEUS:
        line = (
            f"{src.name}: read {rep.read:,} hours from {where(src)}, {rep.new:,} with requests; "
            f"{kept.n_requests:,} requests in the hours kept."
        )
        facts = {
            "source": src.name,
            "hours_read": rep.read,
            "hours_with_requests": rep.new,
            "n_requests": kept.n_requests,
        }
        figures: tuple[tuple[str, str], ...] = (("Hours read", f"{rep.read:,}"), ("Requests", f"{kept.n_requests:,}"))
        return Outcome(True, (Line("success", line),), figures, facts, rep)
    ttft = summarize(source_ttft_ms(store, src.id))
    p50, p95 = ttft["p50"], ttft["p95"]
    pages = f"{rep.pages:,} page{'' if rep.pages == 1 else 's'}"
    lines = [
        Line(
            "success",
            f"{src.name}: read {rep.read:,} requests in {pages}, {rep.new:,} new, {len(rep.left_out):,} left out; "
            f"{kept.n_requests:,} kept.",
        )
    ]
    lines += [Line("warning", f"Left out {clean(rid, src)}: {why}.") for rid, why in rep.left_out[:5]]
    if len(rep.left_out) > 5:
        lines.append(Line("warning", f"… and {len(rep.left_out) - 5:,} more left out."))
    if rep.stopped:
        lines.append(Line("info", f"{src.name}: {rep.stopped}."))
    elif max_pages is not None and rep.pages >= max_pages:
        lines.append(
            Line(
                "info",
                f"Stopped after {pages} (one sync's limit here): sync again for the rest, or run "
                f"ttft-planner sources sync {src.name}.",
            )
        )
    if p50.n:
        few = "" if p95.reliable else " The p95 rests on fewer than 20 requests: it is only the largest value."
        note = (
            f"Production TTFT (first token − start, nearest rank) over the {p50.n:,} kept requests with a first-token "
            f"time.{few}"
        )
    else:
        note = "No kept request has a first-token time (the proxy records one for streamed replies only)."
    lines.append(Line("caption", note))
    figures = (
        ("Read", f"{rep.read:,}"),
        ("New", f"{rep.new:,}"),
        ("Left out", f"{len(rep.left_out):,}"),
        ("Production TTFT p50", _ms(p50)),
        ("Production TTFT p95", _ms(p95)),
    )
    facts = {
        "source": src.name,
        "read": rep.read,
        "new": rep.new,
        "pages": rep.pages,
        "stopped": rep.stopped,
        "left_out": [{"request_id": clean(i, src), "reason": why} for i, why in rep.left_out[:20]],
        "n_left_out": len(rep.left_out),
        "n_requests": kept.n_requests,
        "watermark_ms": kept.watermark_ms,
        "ttft_ms": {k: {"value": v.value, "n": v.n, "reliable": v.reliable} for k, v in ttft.items()},
    }
    return Outcome(True, tuple(lines), figures, facts, rep)
