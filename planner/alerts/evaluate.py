"""One evaluation pass: observe every rule's series in the store, step their state machines, store the result with
one queued delivery per channel for each transition, and send the deliveries that are due. A probe rule observes the
probe samples (planner.store.probe_queries); a production rule the live sources' requests mapped to each endpoint
(planner.sources.by_endpoint), one series per endpoint under the vantage PRODUCTION_VANTAGE.

The worker calls `evaluate_all(deliver=False)` on its housekeeping tick and sends the deliveries on a thread of
their own (planner.worker.team), so no receiver holds up its housekeeping; `ttft-planner alerts evaluate` calls
`evaluate_all` and sends in the same call. A rule behaves the same whichever runs it. Sending is
planner.alerts.deliver: at least once, all of a pass's sends within one deadline, a failure retried with backoff on
later passes until MAX_ATTEMPTS, and its last error kept in the store.

Both may run at once: a transition is stored only by the pass that stepped the stored state (the other's is
dropped), and a delivery is claimed before it is sent (planner.store.alerts.claim_delivery), so a pass sends only
what it won, and every attempt is counted once.
"""

from __future__ import annotations

from sqlalchemy.engine import Engine

# deliver_due and PassResult live in planner.alerts.deliver; re-exported here, where a pass starts.
from planner.alerts.deliver import PassResult, deliver_due
from planner.alerts.notify import Notice, channels_of, message
from planner.alerts.rules import PRODUCTION_VANTAGE, AlertKind, Observation, Rule, SeriesStatus, judged, step
from planner.alerts.words import series_where
from planner.sources.by_endpoint import EndpointTarget, production_ttft
from planner.store import alerts as store
from planner.store.endpoints import endpoint_rows
from planner.store.probe_queries import SeriesKey, series_keys, summary

__all__ = ["PassResult", "deliver_due", "evaluate_all", "observe", "observe_production"]


def observe(engine: Engine, rule: Rule, key: SeriesKey, now_ms: int) -> Observation:
    """The rule's value for one probe series over [now − window, now)."""
    start_ms = now_ms - int(rule.window_s * 1000)
    if rule.kind in (AlertKind.P95_OVER, AlertKind.ERROR_RATE_OVER):
        s = summary(engine, key, start_ms, now_ms)
        if rule.kind is AlertKind.P95_OVER:
            return Observation(s["p95_ms"], int(s["n"]))
        return Observation(s["error_rate"], int(s["n"]) + int(s["failed"]))
    if rule.kind is AlertKind.NO_SUCCESS:
        last_ok, first_attempt = store.last_success_ms(engine, key.endpoint_id, key.vantage)
        since = last_ok if last_ok is not None else first_attempt
        return Observation(None if since is None else (now_ms - since) / 60_000, 1)
    value = store.newest_cold_s(engine, key.endpoint_id, key.vantage, start_ms)
    return Observation(value, 0 if value is None else 1)


def observe_production(engine: Engine, rule: Rule, endpoint: EndpointTarget, now_ms: int) -> Observation:
    """A production rule's value for one endpoint: the p95 TTFT (and n) of the live sources' requests mapped to it
    (planner.sources.by_endpoint) that arrived in [now − window, now)."""
    prod = production_ttft(engine, endpoint, now_ms - int(rule.window_s * 1000), now_ms)
    return Observation(prod.p95.value, prod.n)


def _production_series(
    engine: Engine, rule: Rule, states: dict[tuple[int, int, str], SeriesStatus], now_ms: int
) -> list[tuple[SeriesKey, Observation]]:
    """A production rule's series and what each sees now: the rule's one endpoint always; with every endpoint, each
    one that has production requests in the window or a series stored already (an endpoint no source sends to is not
    listed as watched)."""
    out = []
    for ep in endpoint_rows(engine):
        if ep.id is None or (rule.endpoint_id is not None and ep.id != rule.endpoint_id):
            continue
        obs = observe_production(engine, rule, ep, now_ms)
        stored = (int(rule.id or 0), ep.id, PRODUCTION_VANTAGE) in states
        if rule.endpoint_id is not None or obs.n or stored:
            out.append((SeriesKey(ep.id, ep.name, PRODUCTION_VANTAGE), obs))
    return out


def evaluate_all(engine: Engine, now_ms: int, *, deliver: bool = True, vantage: str | None = None) -> PassResult:
    """Evaluate every rule on every series it watches, then (unless `deliver` is False) send what is due.

    `vantage` limits the pass to that vantage's probe series and their deliveries: each vantage's lease holder
    evaluates its own, so two workers never both notify one transition. A production rule's series belong to no
    vantage: every pass evaluates and delivers them, and the store's conditional writes (one stored step per
    transition, one claim per delivery) keep one transition one event, sent once per channel."""
    result = PassResult()
    rules = store.load_rules(engine)
    if not rules:
        return result
    keys = series_keys(engine)
    states = store.series_states(engine)
    for rule in rules:
        as_judged = judged(rule)
        if rule.kind.production:
            for key, obs in _production_series(engine, as_judged, states, now_ms):
                _evaluate_series(engine, rule, as_judged, key, obs, states, now_ms, result)
            continue
        for key in keys:
            if rule.endpoint_id is not None and key.endpoint_id != rule.endpoint_id:
                continue
            if vantage is not None and key.vantage != vantage:
                continue
            obs = observe(engine, as_judged, key, now_ms)
            _evaluate_series(engine, rule, as_judged, key, obs, states, now_ms, result)
    if deliver:
        deliver_due(engine, now_ms, result, vantage=vantage)
    return result


def _evaluate_series(
    engine: Engine,
    rule: Rule,
    as_judged: Rule,
    key: SeriesKey,
    obs: Observation,
    states: dict[tuple[int, int, str], SeriesStatus],
    now_ms: int,
    result: PassResult,
) -> None:
    """Step one series on what it saw and store the step (with its event and deliveries) unless another pass
    stepped it first."""
    stored = states.get((int(rule.id or 0), key.endpoint_id, key.vantage))
    prev = stored or SeriesStatus()
    status, transition = step(as_judged, prev, obs, now_ms)
    event = None
    if transition is not None:
        notice = Notice(as_judged, transition, key.endpoint_name, key.vantage, obs.value, obs.n, now_ms)
        event = store.AlertEventRow(
            rule_id=int(rule.id or 0),
            endpoint_id=key.endpoint_id,
            vantage=key.vantage,
            transition=str(transition),
            value=obs.value,
            threshold=as_judged.threshold,
            n=obs.n,
            window_s=rule.window_s,
            message=message(notice)[:1000],
            at_ms=now_ms,
        )
    saved = store.save_evaluation(
        engine,
        rule,
        key.endpoint_id,
        key.vantage,
        status,
        now_ms,
        event,
        channels_of(rule) if event is not None else [],
        seen=None if stored is None else stored.state,
    )
    if not saved:  # another pass stored this series' step since we read it (and its transition, if any)
        return
    if transition is not None:
        result.transitions.append((rule.name, series_where(rule.kind, key.endpoint_name, key.vantage), str(transition)))
    result.series += 1
