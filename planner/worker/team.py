"""What a team deployment adds to a probe worker: Prometheus /metrics and SLO alert evaluation.

The worker calls these hooks and nothing else: `on_stored` after rows are in the store (so /metrics never counts a
sample the store lacks), `on_lateness` when the schedule starts a probe, and `tick` from its housekeeping — only when
`due`, so an idle worker starts no thread five times a second for nothing. Alerts are evaluated by the lease holder of
each vantage for that vantage's series only, at most every `alerts_every_s`, so standbys and other vantages never
notify the same transition twice.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from sqlalchemy.engine import Engine

from planner.alerts.evaluate import evaluate_all
from planner.metrics import WorkerMetrics
from planner.store import alerts as alert_store
from planner.store.probes import ProbeSampleRow

__all__ = ["TeamHooks"]

log = logging.getLogger("planner.worker")


class TeamHooks:
    def __init__(
        self,
        engine: Engine,
        vantage: str,
        *,
        metrics_port: int | None = None,
        metrics_address: str = "127.0.0.1",
        alerts_every_s: float = 30.0,
    ) -> None:
        self.engine = engine
        self.vantage = vantage
        self.metrics = WorkerMetrics() if metrics_port else None
        self._metrics_port = metrics_port
        self._metrics_address = metrics_address
        self._server = None
        self.alerts_every_ms = int(alerts_every_s * 1000)
        self._next_alerts_ms = 0

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
        """Evaluate this vantage's alert series when due (lease holder only); refresh the alert-state gauges."""
        if not holds_lease or not self.due(now_ms):
            return
        self._next_alerts_ms = now_ms + self.alerts_every_ms
        try:
            result = evaluate_all(self.engine, now_ms, vantage=self.vantage)
        except Exception:  # noqa: BLE001 - an alert pass must never stop the probes; it is retried next tick
            log.exception("alert evaluation failed; retrying on the next tick")
            return
        for rule, where, transition in result.transitions:
            log.warning("alert %s: %s on %s", transition, rule, where)
        for failure in result.failed:
            log.warning("alert delivery failed: %s", failure)
        if self.metrics is not None:
            frame = alert_store.series_frame(self.engine)
            frame = frame[frame["vantage"] == self.vantage]
            self.metrics.set_alert_states(
                zip(frame["rule"], frame["endpoint"], frame["vantage"], frame["state"], strict=True)
            )
