"""RTT store on a temp SQLite file and the real local PostgreSQL: targets, scheduling, samples, summary."""

from __future__ import annotations

import asyncio

import pandas as pd
import pytest

from planner.store.rtt import (
    SampleRecord,
    TargetExists,
    TargetNotFound,
    add_target,
    insert_rtt_samples,
    list_targets,
    load_samples,
    remove_target,
    rtt_summary,
    scheduled_rtt_targets,
    set_target_enabled,
)
from planner.worker.runner import run_scheduled_rtt
from tests.support.rtt_target import serve_in_thread

T0 = 1_796_000_000_000


def _rec(region, v, at, *, side="server", method="tcp-connect", vantage="berlin", err=None):
    return SampleRecord(
        region_id=region,
        target=f"https://{region}.example/ping",
        side=side,
        method=method,
        rtt_ms=v,
        measured_at_ms=at,
        vantage=vantage,
        error_class=err,
        error_detail=f"{err} detail" if err else None,
    )


def test_targets_add_list_schedule_remove(engine):
    add_target(engine, "acme-eu", "https://eu.acme.dev/health", lat=50.1, lon=8.7, interval_s=60, enabled=True)
    add_target(engine, "acme-us", "us.acme.dev:443", enabled=False)
    add_target(engine, "acme-ap", "ap.acme.dev:443", enabled=True, vantage="tokyo-office")
    assert [r.region_id for r in list_targets(engine)] == ["acme-ap", "acme-eu", "acme-us"]
    due = scheduled_rtt_targets(engine)
    assert [r.region_id for r in due] == ["acme-eu", "acme-ap"]
    assert due[0].interval_s == 60 and due[0].id is not None
    assert [r.region_id for r in scheduled_rtt_targets(engine, vantage="berlin")] == ["acme-eu"]
    set_target_enabled(engine, "acme-us", True, interval_s=30)
    assert "acme-us" in [r.region_id for r in scheduled_rtt_targets(engine)]
    with pytest.raises(TargetExists, match="acme-eu"):
        add_target(engine, "acme-eu", "x.example:443")
    remove_target(engine, "acme-eu")
    with pytest.raises(TargetNotFound, match="acme-eu"):
        remove_target(engine, "acme-eu")
    with pytest.raises(ValueError, match="at least 10 s"):
        add_target(engine, "fast", "x.example:443", interval_s=1)


def test_summary_per_region_vantage_side_nearest_rank(engine):
    recs = [_rec("aws-eu-west-1", v, T0 + i) for i, v in enumerate([30, 31, 32, 33, 34, 35, 36, 37, 38, 90])]
    recs += [_rec("aws-eu-west-1", None, T0 + 50, method="tls", err="tls")]
    recs += [_rec("aws-eu-west-1", 25.0, T0 + 60, side="browser", method="resource-timing")]
    recs += [_rec("aws-eu-west-1", 45.0, T0 + 61, side="browser", method="fetch-performance-now")]
    recs += [_rec("aws-us-east-1", 95.0, T0 + 5, vantage="tokyo")]
    recs += [_rec("dead-region", None, T0 + 7, err="unresolvable", method="dns")]
    recs += [_rec("aws-eu-west-1", 3.0, T0 + 8, method="dns")]  # DNS time never counts as RTT
    assert insert_rtt_samples(engine, recs) == len(recs)

    s = rtt_summary(engine, vantage="berlin")
    srv = s[(s.region_id == "aws-eu-west-1") & (s.side == "server")].iloc[0]
    assert (srv.median_ms, srv.min_ms, srv.p90_ms, srv.n) == (34.0, 30.0, 38.0, 10)
    assert srv.method == "tcp-connect" and srv.n_errors == 1
    assert srv.last_error_class == "tls"  # the newest outcome failed: its reason shows on the row
    assert srv.last_measured_at_ms == T0 + 50
    br = s[(s.region_id == "aws-eu-west-1") & (s.side == "browser")].iloc[0]
    assert br.method == "resource-timing" and br.median_ms == 25.0 and br.n == 1  # fallback not mixed in
    dead = s[s.region_id == "dead-region"].iloc[0]
    assert dead.n == 0 and pd.isna(dead.median_ms)
    assert dead.last_error_class == "unresolvable"
    assert list(s.region_id)[-1] == "dead-region"  # failures rank last
    assert "aws-us-east-1" not in set(s.region_id)  # another vantage
    assert set(rtt_summary(engine).vantage) == {"berlin", "tokyo"}
    assert rtt_summary(engine, since_ms=T0 + 55).region_id.tolist() == ["aws-eu-west-1"]


def test_browser_fallback_is_used_only_without_resource_timing(engine):
    insert_rtt_samples(
        engine,
        [_rec("r", v, T0 + i, side="browser", method="fetch-performance-now") for i, v in enumerate([50, 52, 54])],
    )
    row = rtt_summary(engine).iloc[0]
    assert row.method == "fetch-performance-now" and row.median_ms == 52.0


def test_unknown_side_or_method_is_refused(engine):
    with pytest.raises(ValueError, match="side"):
        insert_rtt_samples(engine, [_rec("r", 1.0, T0, side="client")])
    with pytest.raises(ValueError, match="method"):
        insert_rtt_samples(engine, [_rec("r", 1.0, T0, method="icmp")])
    assert load_samples(engine).empty


def test_scheduled_run_stores_samples_and_failures(engine):
    server = serve_in_thread()
    try:
        add_target(engine, "local", f"{server.base_url}/ping", enabled=True, interval_s=10)
        add_target(engine, "nowhere", "https://no-such-host.invalid/", enabled=True, interval_s=10)
        for row in scheduled_rtt_targets(engine):
            asyncio.run(run_scheduled_rtt(engine, row, "ci-runner", n=10))
    finally:
        server.stop()
    s = rtt_summary(engine, vantage="ci-runner").set_index("region_id")
    assert s.loc["local", "n"] == 10 and s.loc["local", "median_ms"] > 0
    assert s.loc["nowhere", "last_error_class"] == "unresolvable"
    raw = load_samples(engine, region_ids=["local"])
    assert set(raw.method) == {"dns", "tcp-connect", "https-ttfb"}
    assert raw.run_id.nunique() == 1 and (raw.vantage == "ci-runner").all()
