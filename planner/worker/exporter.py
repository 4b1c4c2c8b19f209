"""Prometheus metrics of a worker (`ttft-planner worker --metrics-port`), with the official client library.

What a team's Prometheus scrapes, per endpoint and vantage (label values are the endpoint names and vantages the
team configured, error classes from planner.probes.errors and states from planner.alerts: cardinality is bounded,
never one label per sample):

- ttft_planner_ttft_seconds (histogram): TTFT of every stored *sample* (planner.endpoints.samples' one definition),
  so its count equals the samples the pages count; buckets resolve the 200 / 500 / 1000 ms targets exactly;
- ttft_planner_phase_seconds{phase}: dns, connect, tls, headers, first event of the same samples;
- ttft_planner_probe_outcomes_total{kind, outcome}: every stored row: ok, an error class, or skipped;
- ttft_planner_schedule_lateness_seconds: how late the schedule started its probes;
- ttft_planner_buffer_rows: rows held in memory, waiting to be written (a store that is down shows here first);
- ttft_planner_buffer_rows_max: the most rows the worker holds (`worker --max-held-rows`); past it the oldest go;
- ttft_planner_buffer_rows_dropped_total: rows lost unsaved, past that bound (or refused by the spool at stop);
- ttft_planner_store_write_failing: 1 while the store refuses the held rows (the last flush failed), else 0;
- ttft_planner_alert_state{rule}: 0 ok, 1 pending, 2 firing.

Outcomes and timings are observed when rows are *stored* (after insert), so a scrape never counts a sample the store
does not hold. The buffer's figures (`watch_buffer`) are read from the worker's row buffer at each scrape, so they
are current even while the store, and every task that writes to it, is stuck.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping, Sized
from typing import Any, Protocol
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from planner.endpoints.samples import is_sample
from planner.probes.errors import ERROR_CLASSES

__all__ = ["PHASE_COLUMNS", "TTFT_BUCKETS_S", "HeldRows", "WorkerMetrics"]

#: Upper bounds (s): every interaction target (0.2, 0.5, 1.0 s) is a bucket edge, with resolution around each.
TTFT_BUCKETS_S = (
    0.025,
    0.05,
    0.075,
    0.1,
    0.15,
    0.2,
    0.25,
    0.3,
    0.4,
    0.5,
    0.6,
    0.75,
    1.0,
    1.25,
    1.5,
    2.0,
    3.0,
    5.0,
    10.0,
    30.0,
)
LATENESS_BUCKETS_S = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0)
PHASE_COLUMNS = {
    "dns": "dns_ms",
    "connect": "connect_ms",
    "tls": "tls_ms",
    "headers": "headers_ms",
    "first_event": "first_event_ms",
}
ALERT_STATE_VALUE = {"ok": 0, "pending": 1, "firing": 2}


class HeldRows(Protocol):
    """What /metrics reads of a worker's row buffer (planner.worker.buffer.RowBuffer)."""

    @property
    def rows(self) -> Sized: ...  # held in memory, unsaved

    max_rows: int  # the bound of `rows`
    dropped: int  # lost unsaved so far
    last_error: str | None  # the store's last refusal; None after a good flush


class _BufferCollector(Collector):
    """The buffer figures of one vantage's worker, read at each scrape."""

    def __init__(self, vantage: str, buffer: HeldRows) -> None:
        self.vantage = vantage
        self.buffer = buffer

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        b, v = self.buffer, [self.vantage]
        bound = GaugeMetricFamily(
            "ttft_planner_buffer_rows_max", "Most rows held while the store refuses them.", labels=["vantage"]
        )
        bound.add_metric(v, b.max_rows)
        dropped = CounterMetricFamily(
            "ttft_planner_buffer_rows_dropped",
            "Probe rows lost unsaved: past the held-rows bound, or refused by the spool at stop.",
            labels=["vantage"],
        )
        dropped.add_metric(v, b.dropped)
        failing = GaugeMetricFamily(
            "ttft_planner_store_write_failing", "1 while the store refuses the held rows, else 0.", labels=["vantage"]
        )
        failing.add_metric(v, int(bool(b.rows) and b.last_error is not None))
        yield from (bound, dropped, failing)


class WorkerMetrics:
    """One worker's metrics in their own registry (two workers in one test process do not share counters)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.ttft = Histogram(
            "ttft_planner_ttft_seconds",
            "Time to first token of stored samples.",
            ["endpoint", "vantage"],
            buckets=TTFT_BUCKETS_S,
            registry=r,
        )
        self.phase = Histogram(
            "ttft_planner_phase_seconds",
            "Phase timings of stored samples, from request start.",
            ["endpoint", "vantage", "phase"],
            buckets=TTFT_BUCKETS_S,
            registry=r,
        )
        self.outcomes = Counter(
            "ttft_planner_probe_outcomes",
            "Stored probe rows by kind and outcome.",
            ["endpoint", "vantage", "kind", "outcome"],
            registry=r,
        )
        self.lateness = Histogram(
            "ttft_planner_schedule_lateness_seconds",
            "Schedule lateness of started probes.",
            ["vantage"],
            buckets=LATENESS_BUCKETS_S,
            registry=r,
        )
        self.buffer_rows = Gauge(
            "ttft_planner_buffer_rows", "Rows waiting to be written to the store.", ["vantage"], registry=r
        )
        self.alert_state = Gauge(
            "ttft_planner_alert_state",
            "Alert series state: 0 ok, 1 pending, 2 firing.",
            ["rule", "endpoint", "vantage"],
            registry=r,
        )

    def serve(self, port: int, address: str = "127.0.0.1") -> tuple[WSGIServer, threading.Thread]:
        """Serve /metrics on address:port in a background thread; returns (server, thread)."""
        return start_http_server(port, addr=address, registry=self.registry)

    def observe_stored(self, rows: Iterable[Any], endpoint_names: Mapping[int, str]) -> None:
        """Count rows that were just stored (ProbeSampleRow-like objects)."""
        for row in rows:
            endpoint = endpoint_names.get(row.endpoint_id, str(row.endpoint_id))
            outcome = (
                "ok"
                if row.ok
                else (row.error_class if row.error_class in ERROR_CLASSES or row.error_class == "skipped" else "other")
            )
            self.outcomes.labels(endpoint, row.vantage, row.kind, outcome).inc()
            if not is_sample(ok=row.ok, ttft_ms=row.ttft_ms, kind=row.kind, cached_series=row.cached_series):
                continue
            self.ttft.labels(endpoint, row.vantage).observe(row.ttft_ms / 1000.0)
            for phase, column in PHASE_COLUMNS.items():
                value = getattr(row, column, None)
                if value is not None:
                    self.phase.labels(endpoint, row.vantage, phase).observe(value / 1000.0)

    def observe_lateness(self, vantage: str, lateness_ms: float) -> None:
        self.lateness.labels(vantage).observe(max(lateness_ms, 0.0) / 1000.0)

    def set_buffer_rows(self, vantage: str, rows: int) -> None:
        self.buffer_rows.labels(vantage).set(rows)

    def watch_buffer(self, vantage: str, buffer: HeldRows) -> None:
        """Read `buffer`'s held, bound, dropped and failing figures at every scrape from now on (set_buffer_rows is
        then ignored: the scrape's reading is newer)."""
        self.buffer_rows.labels(vantage).set_function(lambda: len(buffer.rows))
        self.registry.register(_BufferCollector(vantage, buffer))

    def set_alert_states(self, states: Iterable[tuple[str, str, str, str]]) -> None:
        """(rule, endpoint, vantage, state) for every series: replaces what was shown (a removed rule disappears)."""
        self.alert_state.clear()
        for rule, endpoint, vantage, state in states:
            self.alert_state.labels(rule, endpoint, vantage).set(ALERT_STATE_VALUE.get(state, 0))
