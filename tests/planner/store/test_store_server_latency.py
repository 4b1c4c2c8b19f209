"""The endpoint's own latency figure (Bedrock's metadata.metrics.latencyMs) is stored beside our timings, on SQLite and
PostgreSQL: the phase query reports its median and n, and the CSV export carries the column."""

from __future__ import annotations

import csv
import io

from planner.probes.ttft import TtftSample
from planner.store.endpoints import get_or_create_manual_endpoint
from planner.store.probe_queries import SeriesKey, export_csv, phase_breakdown
from planner.store.probes import insert_samples, sample_row


def test_server_latency_is_stored_and_reported_beside_ours(engine):
    ep = get_or_create_manual_endpoint(engine, "https://bedrock-runtime.eu-central-1.amazonaws.com", "m", "bedrock")
    rows = []
    for i, (ours, server) in enumerate([(250.0, 700.0), (260.0, 710.0), (270.0, None)]):
        s = TtftSample(ok=True, ttft_ms=ours, first_content_ms=ours, started_at_ms=1_000 + i, server_latency_ms=server)
        rows.append(sample_row(s, ep.id, "", "manual", 1_000 + i))
    assert insert_samples(engine, rows) == 3
    key = SeriesKey(ep.id, ep.name, "")
    phases = phase_breakdown(engine, key, 0, 10_000).set_index("phase")
    assert (phases.loc["server_latency_ms", "p50_ms"], phases.loc["server_latency_ms", "n"]) == (700.0, 2)
    assert phases.loc["ttft_ms", "n"] == 3
    exported = list(csv.DictReader(io.StringIO(export_csv(engine, key, 0, 10_000))))
    assert [r["server_latency_ms"] for r in exported] == ["700.0", "710.0", ""]
