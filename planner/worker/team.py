"""What a team deployment adds to a probe worker: Prometheus /metrics and SLO alert evaluation.

The worker calls these hooks and nothing else: `on_stored` after rows are in the store (so /metrics never counts a
sample the store lacks), `on_lateness` when the schedule starts a probe, and `tick` from its housekeeping — only when
`due`, so an idle worker starts no thread five times a second for nothing. Alerts are evaluated by the lease holder of
each vantage for that vantage's series only, at most every `alerts_every_s`, so standbys and other vantages never
notify the same transition twice.

The evaluation (reads and writes of the store) runs in the tick; the deliveries it queues do not: they are sent on a
thread of their own (planner.alerts.deliver: all of a pass's sends within `delivery_deadline_s`), so a webhook or an
SMTP server that accepts and never answers never holds up housekeeping, and the lease's renewal in it. One delivery
pass at a time: a tick that finds the last one still under way leaves what is due to the next tick.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from wsgiref.simple_server import WSGIServer

from sqlalchemy.engine import Engine

from planner.alerts.deliver import PASS_DEADLINE_S, deliver_due
from planner.alerts.evaluate import evaluate_all
from planner.alerts.notify import TIMEOUT_S
from planner.store import alerts as alert_store
from planner.store.probes import ProbeSampleRow
from planner.worker.buffer import first_line
from planner.worker.exporter import WorkerMetrics

__all__ = ["TeamHooks"]

log = logging.getLogger("planner.worker")


class TeamHooks:
    """The team hooks of one worker. `delivery_deadline_s` bounds one delivery pass's sends together and
    `send_timeout_s` each network step of a send (real seconds, both)."""

    def __init__(
        self,
        engine: Engine,
        vantage: str,
        *,
        metrics_port: int | None = None,
        metrics_address: str = "127.0.0.1",
        alerts_every_s: float = 30.0,
        delivery_deadline_s: float = PASS_DEADLINE_S,
        send_timeout_s: float = TIMEOUT_S,
    ) -> None:
        self.engine = engine
        self.vantage = vantage
        self.metrics = WorkerMetrics() if metrics_port else None
        self._metrics_port = metrics_port
        self._metrics_address = metrics_address
        self._server: WSGIServer | None = None
        self.alerts_every_ms = int(alerts_every_s * 1000)
        self._next_alerts_ms = 0
        self.delivery_deadline_s = delivery_deadline_s
        self.send_timeout_s = send_timeout_s
        self.delivering: threading.Thread | None = None  # the delivery pass under way, if any

    def start(self) -> None:
        if self.metrics is not None and self._metrics_port:
            self._server, _ = self.metrics.serve(self._metrics_port, self._metrics_address)
            log.info("serving Prometheus metrics on http://%s:%d/metrics", self._metrics_address, self._metrics_port)

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server = None

    def on_stored(self, rows: Iterable[ProbeSampleRow], endpoint_names: dict[int, str]) -> None:
        if self.metrics is not None:
            self.metrics.observe_stored(rows, endpoint_names)

    def on_lateness(self, lateness_ms: float) -> None:
        if self.metrics is not None:
            self.metrics.observe_lateness(self.vantage, lateness_ms)

    def on_buffer(self, rows: int) -> None:
        if self.metrics is not None:
            self.metrics.set_buffer_rows(self.vantage, rows)

    def due(self, now_ms: int) -> bool:
        """True when an alert pass is due at now_ms (tick would evaluate): the caller skips the thread otherwise."""
        return now_ms >= self._next_alerts_ms

    def tick(self, now_ms: int, *, holds_lease: bool) -> None:
        """Evaluate this vantage's alert series when due (lease holder only), start sending what is due on the
        delivery thread (returns without waiting for it), refresh the alert-state gauges."""
        if not holds_lease or not self.due(now_ms):
            return
        self._next_alerts_ms = now_ms + self.alerts_every_ms
        try:
            result = evaluate_all(self.engine, now_ms, vantage=self.vantage, deliver=False)
        except Exception as exc:  # noqa: BLE001 - an alert pass must never stop the probes; it is retried next tick
            log.warning(
                "alert evaluation failed (retried on the next tick): %s: %s", type(exc).__name__, first_line(exc)
            )
            return
        for rule, where, transition in result.transitions:
            log.warning("alert %s: %s on %s", transition, rule, where)
        self._start_deliveries(now_ms)
        if self.metrics is not None:
            frame = alert_store.series_frame(self.engine)
            frame = frame[frame["vantage"] == self.vantage]
            self.metrics.set_alert_states(
                zip(frame["rule"], frame["endpoint"], frame["vantage"], frame["state"], strict=True)
            )

    def _start_deliveries(self, now_ms: int) -> None:
        """Send the due deliveries as of `now_ms` on a daemon thread (a stop never waits for a receiver), unless the
        last pass is still under way."""
        if self.delivering is not None and self.delivering.is_alive():
            log.info("alert deliveries: the last pass is still sending; what is due waits for the next tick")
            return
        self.delivering = threading.Thread(target=self._deliver, args=(now_ms,), name="alert-deliveries", daemon=True)
        self.delivering.start()

    def _deliver(self, now_ms: int) -> None:
        """One delivery pass; its failures are logged one line each (their errors are in the store)."""
        try:
            result = deliver_due(
                self.engine,
                now_ms,
                vantage=self.vantage,
                deadline_s=self.delivery_deadline_s,
                send_timeout_s=self.send_timeout_s,
            )
        except Exception as exc:  # noqa: BLE001 - a store problem: what is due stays due for the next pass
            log.warning(
                "alert deliveries failed (retried on the next tick): %s: %s", type(exc).__name__, first_line(exc)
            )
            return
        for failure in result.failed:
            log.warning("alert delivery failed: %s", failure)
        if result.unfinished:
            log.warning(
                "alert deliveries: %d still sending or not started when the pass's %g s ran out; what is not "
                "delivered is retried on a later pass",
                result.unfinished,
                self.delivery_deadline_s,
            )
