"""/metrics: scraped over HTTP and parsed with prometheus_client's own parser, the TTFT histogram counts exactly
the samples the store holds (planner.endpoints.samples' definition), per endpoint, and its 200/500/1000 ms buckets agree
with the stored values."""

from __future__ import annotations

import time

import httpx
import numpy as np
import sqlalchemy as sa
from prometheus_client.parser import text_string_to_metric_families

from planner.endpoints.samples import SAMPLE_SQL
from planner.store import open_store
from planner.store.endpoints import EndpointRow
from planner.store.probes import ProbeSampleRow
from planner.worker.exporter import WorkerMetrics
from tests.support.compare_seed import seed_endpoint
from tests.support.rtt_target import free_port


def _scrape(metrics: WorkerMetrics) -> dict[tuple[str, tuple], float]:
    """Serve `metrics` on a free port, scrape /metrics once and stop: (sample name, sorted labels) → value."""
    port = free_port()
    server, _ = metrics.serve(port)
    try:
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    finally:
        server.shutdown()
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_histogram_counts_equal_the_stored_samples(tmp_path):
    engine = open_store(f"sqlite:///{tmp_path / 'm.db'}")
    now_ms = int(time.time() * 1000)
    seed_endpoint(
        engine,
        "fast-a",
        median_ms=300,
        n=120,
        errors=7,
        seed=1,
        start_ms=now_ms - 3_600_000,
        span_ms=3_500_000,
        vantage="office",
        cold_ms=4200,
    )
    seed_endpoint(
        engine, "slow-b", median_ms=700, n=80, seed=2, start_ms=now_ms - 3_600_000, span_ms=3_500_000, vantage="office"
    )
    with engine.connect() as conn:
        names = dict(conn.execute(sa.select(EndpointRow.__table__.c.id, EndpointRow.__table__.c.name)).all())
        rows = [ProbeSampleRow(**dict(r)) for r in conn.execute(sa.select(ProbeSampleRow.__table__)).mappings()]
    metrics = WorkerMetrics()
    metrics.observe_stored(rows, names)
    scraped = _scrape(metrics)
    for endpoint_id, name in names.items():
        with engine.connect() as conn:
            ttfts = np.array(
                conn.execute(
                    sa.text(f"SELECT ttft_ms FROM probe_sample WHERE endpoint_id = :e AND {SAMPLE_SQL}"),
                    {"e": endpoint_id},
                )
                .scalars()
                .all()
            )
        labels = (("endpoint", name), ("vantage", "office"))
        assert scraped[("ttft_planner_ttft_seconds_count", labels)] == len(ttfts) > 0
        for le_s in (0.2, 0.5, 1.0):
            bucket = scraped[("ttft_planner_ttft_seconds_bucket", tuple(sorted((*labels, ("le", str(le_s))))))]
            assert bucket == int((ttfts <= le_s * 1000).sum()), (name, le_s)
    # the seeded failures carry "http_503", not one of planner.probes.errors' classes: counted as "other", so a
    # stray class string cannot add a label value per distinct string
    failed = (("endpoint", "fast-a"), ("kind", "scheduled"), ("outcome", "other"), ("vantage", "office"))
    cold = (("endpoint", "fast-a"), ("kind", "cold"), ("outcome", "ok"), ("vantage", "office"))
    assert scraped[("ttft_planner_probe_outcomes_total", failed)] == 7
    assert scraped[("ttft_planner_probe_outcomes_total", cold)] == 1  # a cold reading: an outcome, not a sample


def test_alert_states_replace_what_was_shown():
    metrics = WorkerMetrics()
    metrics.set_alert_states([("chat p95", "fast-a", "office", "firing"), ("errors", "fast-a", "office", "ok")])
    metrics.set_alert_states([("chat p95", "fast-a", "office", "pending")])
    scraped = _scrape(metrics)
    states = {k[1]: v for k, v in scraped.items() if k[0] == "ttft_planner_alert_state"}
    assert states == {(("endpoint", "fast-a"), ("rule", "chat p95"), ("vantage", "office")): 1.0}


def test_the_sample_grafana_dashboard_queries_only_metrics_the_worker_exports():
    import json
    import re
    from pathlib import Path

    dashboard = json.loads((Path(__file__).resolve().parents[3] / "docs" / "grafana-dashboard.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    used = {m for e in exprs for m in re.findall(r"\b(ttft_planner_[a-z_]+)", e)}
    metrics = WorkerMetrics()
    metrics.observe_lateness("office", 3.0)
    metrics.observe_stored(
        [
            ProbeSampleRow(
                endpoint_id=1,
                vantage="office",
                kind="scheduled",
                scheduled_at_ms=0,
                started_at_ms=0,
                ok=True,
                ttft_ms=250.0,
                dns_ms=1.0,
            )
        ],
        {1: "a"},
    )
    exported = {s.name for family in metrics.registry.collect() for s in family.samples}
    exported |= {f.name for f in metrics.registry.collect()}
    assert used and used <= exported, used - exported
