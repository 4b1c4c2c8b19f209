"""Alert tables: rules, the state of each (rule, endpoint, vantage) series, the history of transitions, and the
delivery outbox.

Never a secret: a webhook is stored as the NAME of the variable that holds its URL (a Slack or Teams webhook URL
carries its token), and SMTP credentials come from the environment (planner.alerts.notify).
A delivery row is the outbox: it is written in the same transaction as its event, sent by the evaluation that
follows, and retried with backoff until it is delivered or out of attempts; its last error stays visible.

Two evaluators may run at once (a vantage's worker and a hand-run `ttft-planner alerts evaluate`), on SQLite or
PostgreSQL. Each write they race on is one conditional statement that only one of them wins, as requests are claimed
(planner.store.requests): a series' new state is stored only if the state it was stepped from is still the stored one
(so one transition makes one event), and a delivery is claimed before it is sent (claim_delivery: due → held for a
lease, attempts + 1 in SQL), so one event is sent once per channel and every attempt is counted.

Over 400 lines: the four alert tables and their SQL (rules, series, transitions, the delivery outbox with its claims)
form one transaction boundary.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, SQLModel, col, select

from planner.alerts.vocab import AlertKind, AlertState, Rule, SeriesStatus
from planner.endpoints.samples import ATTEMPT_SQL, SAMPLE_SQL
from planner.errors import PlannerError
from planner.lazy import lazy_module
from planner.store.database import session, table_of
from planner.store.endpoints import EndpointRow
from planner.store.worker import ColdReadingRow

if TYPE_CHECKING:
    import pandas as pd
else:  # imported on first use: the worker stores rows and starts without it
    pd = lazy_module("pandas")

__all__ = [
    "AlertDeliveryRow",
    "AlertEventRow",
    "AlertRuleRow",
    "AlertSeriesRow",
    "DuplicateRule",
    "add_rule",
    "alert_history",
    "claim_delivery",
    "deliveries",
    "due_deliveries",
    "finish_delivery",
    "last_success_ms",
    "load_rules",
    "newest_cold_s",
    "remove_rule",
    "rule_by_name",
    "save_evaluation",
    "series_frame",
    "series_states",
]


class AlertRuleRow(SQLModel, table=True):
    __tablename__ = "alert_rule"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=120, unique=True, index=True)
    kind: str = Field(max_length=30)  # planner.alerts.vocab.AlertKind
    threshold: float
    window_s: float
    for_s: float
    min_n: int
    clear_margin: float
    endpoint_id: int | None = Field(default=None, foreign_key="endpoint.id", ondelete="CASCADE")
    interaction: str = Field(default="", max_length=40)
    webhook_env: str = Field(default="", max_length=120)
    webhook_format: str = Field(default="json", max_length=20)
    email_to: str = Field(default="", max_length=500)
    created_at_ms: int = Field(sa_type=sa.BigInteger)


class AlertSeriesRow(SQLModel, table=True):
    """The current state of one (rule, endpoint, vantage) series."""

    __tablename__ = "alert_series"
    __table_args__ = (sa.UniqueConstraint("rule_id", "endpoint_id", "vantage", name="uq_alert_series"),)

    id: int | None = Field(default=None, primary_key=True)
    rule_id: int = Field(foreign_key="alert_rule.id", ondelete="CASCADE")
    endpoint_id: int = Field(foreign_key="endpoint.id", ondelete="CASCADE")
    vantage: str = Field(default="", max_length=120)
    state: str = Field(max_length=20)  # planner.alerts.vocab.AlertState
    since_ms: int | None = Field(default=None, sa_type=sa.BigInteger)
    value: float | None = None
    n: int = 0
    evaluated_at_ms: int = Field(sa_type=sa.BigInteger)


class AlertEventRow(SQLModel, table=True):
    """One transition that notifies: firing or resolved, with the numbers it was decided on."""

    __tablename__ = "alert_event"

    id: int | None = Field(default=None, primary_key=True)
    rule_id: int = Field(foreign_key="alert_rule.id", ondelete="CASCADE", index=True)
    endpoint_id: int = Field(foreign_key="endpoint.id", ondelete="CASCADE")
    vantage: str = Field(default="", max_length=120)
    transition: str = Field(max_length=20)  # planner.alerts.vocab.Transition
    value: float | None = None
    threshold: float
    n: int
    window_s: float
    message: str = Field(max_length=1000)
    at_ms: int = Field(sa_type=sa.BigInteger, index=True)


class AlertDeliveryRow(SQLModel, table=True):
    """One notification of one event on one channel (the outbox)."""

    __tablename__ = "alert_delivery"

    id: int | None = Field(default=None, primary_key=True)
    event_id: int = Field(foreign_key="alert_event.id", ondelete="CASCADE", index=True)
    channel: str = Field(max_length=20)  # webhook | email
    target: str = Field(max_length=500)  # the webhook's variable NAME, or the e-mail addresses
    attempts: int = 0
    next_attempt_at_ms: int | None = Field(default=None, sa_type=sa.BigInteger)  # None once delivered or given up
    delivered_at_ms: int | None = Field(default=None, sa_type=sa.BigInteger)
    last_error: str = Field(default="", max_length=500)


def _to_rule(r: AlertRuleRow) -> Rule:
    return Rule(
        name=r.name,
        kind=AlertKind(r.kind),
        threshold=r.threshold,
        window_s=r.window_s,
        for_s=r.for_s,
        min_n=r.min_n,
        clear_margin=r.clear_margin,
        endpoint_id=r.endpoint_id,
        interaction=r.interaction,
        webhook_env=r.webhook_env,
        webhook_format=r.webhook_format,
        email_to=r.email_to,
        id=r.id,
    )


class DuplicateRule(PlannerError, ValueError):
    """A rule that would repeat one stored already: its name is taken, or another rule watches the same thing."""


# pg_advisory_xact_lock key for adding a rule (the migration lock is 7102026, sample writes 7102027).
_RULE_WRITE_LOCK = 7102028


def _same_watch(t: sa.Table, rule: Rule) -> list[sa.ColumnElement[bool]]:
    """The stored rules that would do exactly what `rule` does: same endpoint, kind, threshold, window, for-duration,
    min n, clear margin and channels (the name, and the target the threshold was taken from, change nothing)."""
    same = [
        t.c.kind == str(rule.kind),
        t.c.threshold == float(rule.threshold),
        t.c.window_s == float(rule.window_s),
        t.c.for_s == float(rule.for_s),
        t.c.min_n == int(rule.min_n),
        t.c.clear_margin == float(rule.clear_margin),
        t.c.endpoint_id.is_not_distinct_from(rule.endpoint_id),
        t.c.webhook_env == rule.webhook_env,
        t.c.email_to == rule.email_to,
    ]
    if rule.webhook_env:  # the body format matters only where there is a webhook
        same.append(t.c.webhook_format == rule.webhook_format)
    return same


def add_rule(engine: Engine, rule: Rule, now_ms: int) -> int:
    """Store a new rule; returns its id. Raises DuplicateRule (a ValueError, its message names the rule it repeats)
    when the name is taken or an identical rule exists, whoever adds it: the page, the CLI, two at once."""
    t = table_of(AlertRuleRow)
    try:
        with engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                # Under READ COMMITTED two adds would not see each other's uncommitted rule: one at a time.
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _RULE_WRITE_LOCK})
            # SQLite: the INSERT comes first, so the check below runs under the write lock it took.
            new_id = conn.execute(
                t.insert()
                .values(
                    name=rule.name,
                    kind=str(rule.kind),
                    threshold=float(rule.threshold),
                    window_s=float(rule.window_s),
                    for_s=float(rule.for_s),
                    min_n=int(rule.min_n),
                    clear_margin=float(rule.clear_margin),
                    endpoint_id=rule.endpoint_id,
                    interaction=rule.interaction,
                    webhook_env=rule.webhook_env,
                    webhook_format=rule.webhook_format,
                    email_to=rule.email_to,
                    created_at_ms=now_ms,
                )
                .returning(t.c.id)
            ).scalar_one()
            twin = conn.execute(
                sa.select(t.c.name).where(t.c.id != new_id, *_same_watch(t, rule)).order_by(t.c.id).limit(1)
            ).scalar()
            if twin is not None:  # rolls the insert back
                raise DuplicateRule(
                    f"The alert rule “{twin}” already does this (same endpoint, condition, window, for-duration, "
                    "min n, clear margin and channels): not added again."
                )
            return int(new_id)
    except IntegrityError:
        if rule_by_name(engine, rule.name) is not None:  # the name is taken (its unique index refused the insert)
            raise DuplicateRule(
                f"An alert rule named “{rule.name}” exists already: choose another name, or remove that rule first."
            ) from None
        raise


def load_rules(engine: Engine) -> list[Rule]:
    with session(engine) as s:
        return [_to_rule(r) for r in s.exec(select(AlertRuleRow).order_by(AlertRuleRow.name)).all()]


def rule_by_name(engine: Engine, name: str) -> Rule | None:
    with session(engine) as s:
        row = s.exec(select(AlertRuleRow).where(AlertRuleRow.name == name)).first()
        return None if row is None else _to_rule(row)


def remove_rule(engine: Engine, name: str) -> bool:
    """Delete a rule with its series, history and deliveries; False when there is no such rule."""
    with session(engine) as s:
        row = s.exec(select(AlertRuleRow).where(AlertRuleRow.name == name)).first()
        if row is None:
            return False
        d, e, a = table_of(AlertDeliveryRow), table_of(AlertEventRow), table_of(AlertSeriesRow)
        events = sa.select(e.c.id).where(e.c.rule_id == row.id)
        s.execute(sa.delete(d).where(d.c.event_id.in_(events)))
        s.execute(sa.delete(e).where(e.c.rule_id == row.id))
        s.execute(sa.delete(a).where(a.c.rule_id == row.id))
        s.delete(row)
        return True


def series_states(engine: Engine) -> dict[tuple[int, int, str], SeriesStatus]:
    """(rule id, endpoint id, vantage) → stored status."""
    with session(engine) as s:
        rows = s.exec(select(AlertSeriesRow)).all()
        return {
            (r.rule_id, r.endpoint_id, r.vantage): SeriesStatus(AlertState(r.state), r.since_ms, r.value, r.n)
            for r in rows
        }


def _frame(engine: Engine, q: sa.Select[Any]) -> pd.DataFrame:
    """The rows of `q`, one column per selected column in the select's order (the columns kept when no row is)."""
    with engine.connect() as conn:
        return pd.DataFrame(conn.execute(q).mappings().all(), columns=list(q.selected_columns.keys()))


def alert_history(engine: Engine, limit: int = 200) -> pd.DataFrame:
    """Newest transitions first, with the rule and endpoint names."""
    e, r, ep = table_of(AlertEventRow), table_of(AlertRuleRow), table_of(EndpointRow)
    q = (
        sa.select(
            e.c.id,
            e.c.at_ms,
            r.c.name.label("rule"),
            ep.c.name.label("endpoint"),
            e.c.vantage,
            e.c.transition,
            e.c.value,
            e.c.threshold,
            e.c.n,
            e.c.window_s,
            e.c.message,
        )
        .join(r, r.c.id == e.c.rule_id)
        .join(ep, ep.c.id == e.c.endpoint_id)
        .order_by(e.c.at_ms.desc(), e.c.id.desc())
        .limit(limit)
    )
    return _frame(engine, q)


def series_frame(engine: Engine) -> pd.DataFrame:
    """Every watched series with its rule and endpoint names, firing first, then pending, then ok."""
    a, r, ep = table_of(AlertSeriesRow), table_of(AlertRuleRow), table_of(EndpointRow)
    q = (
        sa.select(
            r.c.name.label("rule"),
            r.c.kind,
            r.c.threshold,
            ep.c.name.label("endpoint"),
            a.c.vantage,
            a.c.state,
            a.c.value,
            a.c.n,
            a.c.since_ms,
            a.c.evaluated_at_ms,
        )
        .join(r, r.c.id == a.c.rule_id)
        .join(ep, ep.c.id == a.c.endpoint_id)
    )
    df = _frame(engine, q)
    order = {str(AlertState.FIRING): 0, str(AlertState.PENDING): 1, str(AlertState.OK): 2}
    return df.sort_values(
        ["state", "rule", "endpoint"], key=lambda c: c.map(order) if c.name == "state" else c, ignore_index=True
    )


def deliveries(engine: Engine, limit: int = 200) -> pd.DataFrame:
    """Newest deliveries first: channel, target, attempts, delivered or the last error."""
    d = table_of(AlertDeliveryRow)
    return _frame(engine, sa.select(d).order_by(d.c.id.desc()).limit(limit))


def last_success_ms(engine: Engine, endpoint_id: int, vantage: str) -> tuple[int | None, int | None]:
    """(newest successful sample, oldest attempt) started_at_ms of the series; None when there is none."""
    where = "endpoint_id = :e AND vantage = :v"
    with engine.connect() as conn:
        ok = conn.execute(
            sa.text(f"SELECT MAX(started_at_ms) FROM probe_sample WHERE {where} AND {SAMPLE_SQL}"),
            {"e": endpoint_id, "v": vantage},
        ).scalar()
        first = conn.execute(
            sa.text(f"SELECT MIN(started_at_ms) FROM probe_sample WHERE {where} AND {ATTEMPT_SQL}"),
            {"e": endpoint_id, "v": vantage},
        ).scalar()
    return (None if ok is None else int(ok)), (None if first is None else int(first))


def newest_cold_s(engine: Engine, endpoint_id: int, vantage: str, since_ms: int) -> float | None:
    """The cold TTFT (s) of the newest cold reading completed since `since_ms`, or None."""
    c = table_of(ColdReadingRow)
    q = (
        sa.select(c.c.cold_ttft_ms)
        .where(
            c.c.endpoint_id == endpoint_id,
            c.c.vantage == vantage,
            c.c.completed_at_ms >= since_ms,
            c.c.cold_ttft_ms.is_not(None),
        )
        .order_by(c.c.completed_at_ms.desc())
        .limit(1)
    )
    with engine.connect() as conn:
        v = conn.execute(q).scalar()
    return None if v is None else float(v) / 1000.0


def save_evaluation(
    engine: Engine,
    rule: Rule,
    endpoint_id: int,
    vantage: str,
    status: SeriesStatus,
    now_ms: int,
    event: AlertEventRow | None,
    channels: list[tuple[str, str]],
    *,
    seen: AlertState | None,
) -> bool:
    """Store the series' new status, and its event with one queued delivery per channel, in one transaction.

    `seen` is the state the status was stepped from (None: the series was not stored yet). The write is conditional
    on it: of two evaluators that stepped the same state, one stores its status and event and the other stores
    nothing (False), so one transition is one event."""
    a, e, d = table_of(AlertSeriesRow), table_of(AlertEventRow), table_of(AlertDeliveryRow)
    values = {
        "state": str(status.state),
        "since_ms": status.since_ms,
        "value": status.value,
        "n": status.n,
        "evaluated_at_ms": now_ms,
    }
    key = {"rule_id": int(rule.id or 0), "endpoint_id": endpoint_id, "vantage": vantage}
    try:
        with engine.begin() as conn:
            if seen is None:  # the unique (rule, endpoint, vantage) index lets one first write in
                conn.execute(a.insert().values(**key, **values))
            else:
                got = conn.execute(
                    a.update().where(*(a.c[k] == v for k, v in key.items()), a.c.state == str(seen)).values(**values)
                )
                if got.rowcount != 1:
                    return False
            if event is not None:
                event_id = conn.execute(
                    e.insert().values(**event.model_dump(exclude={"id"})).returning(e.c.id)
                ).scalar_one()
                for channel, target in channels:
                    conn.execute(
                        d.insert().values(
                            event_id=event_id,
                            channel=channel,
                            target=target[:500],
                            attempts=0,
                            next_attempt_at_ms=now_ms,
                            last_error="",
                        )
                    )
    except IntegrityError:
        if seen is None:  # another evaluator stored the series first
            return False
        raise
    return True


def due_deliveries(engine: Engine, now_ms: int) -> list[tuple[AlertDeliveryRow, AlertEventRow]]:
    """Deliveries whose next attempt is due, oldest first, each with its event. Claim one before sending it."""
    with session(engine) as s:
        d = table_of(AlertDeliveryRow)
        due = sa.select(d.c.id).where(d.c.next_attempt_at_ms.is_not(None), d.c.next_attempt_at_ms <= now_ms)
        rows = s.exec(
            select(AlertDeliveryRow, AlertEventRow)
            .join(AlertEventRow)
            .where(col(AlertDeliveryRow.id).in_(due))
            .order_by(col(AlertDeliveryRow.id))
        ).all()
        return [(d, e) for d, e in rows]


def claim_delivery(engine: Engine, delivery: AlertDeliveryRow, *, now_ms: int, lease_ms: int) -> int | None:
    """Claim a due delivery for one send attempt, as due_deliveries read it: one conditional UPDATE that only one
    evaluator wins. It must still be due at `now_ms` with the attempts read; it is then held until now_ms + lease_ms
    (another evaluator retries it after that, if this one never finishes) and its attempts are counted in SQL.

    Returns the attempt number now claimed (1 for the first), or None when another evaluator has it (or it is no
    longer due). Report the outcome with finish_delivery."""
    d = table_of(AlertDeliveryRow)
    with engine.begin() as conn:
        claimed = conn.execute(
            d.update()
            .where(
                d.c.id == delivery.id,
                d.c.attempts == delivery.attempts,
                d.c.delivered_at_ms.is_(None),
                d.c.next_attempt_at_ms.is_not(None),
                d.c.next_attempt_at_ms <= now_ms,
            )
            .values(attempts=d.c.attempts + 1, next_attempt_at_ms=now_ms + lease_ms)
            .returning(d.c.attempts)
        ).scalar()
    return None if claimed is None else int(claimed)


def finish_delivery(
    engine: Engine, delivery_id: int, attempt: int, *, now_ms: int, error: str, next_attempt_at_ms: int | None
) -> bool:
    """The outcome of the claimed `attempt`: delivered when `error` is empty, else the error and the next try
    (None: given up). Conditional on the claim: False (nothing written) when the delivery was claimed again since,
    its lease having run out."""
    d = table_of(AlertDeliveryRow)
    with engine.begin() as conn:
        got = conn.execute(
            d.update()
            .where(d.c.id == delivery_id, d.c.attempts == attempt, d.c.delivered_at_ms.is_(None))
            .values(
                last_error=error[:500],
                delivered_at_ms=None if error else now_ms,
                next_attempt_at_ms=next_attempt_at_ms if error else None,
            )
        )
    return got.rowcount == 1
