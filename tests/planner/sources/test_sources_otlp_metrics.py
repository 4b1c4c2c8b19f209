"""OpenTelemetry's GenAI TTFT histogram pushed by the real opentelemetry-sdk (MeterProvider → OTLP/HTTP metric
exporter) to the receiver's /v1/metrics, kept as production hours: requests, and p50/p95 by Prometheus' own
histogram_quantile rule (checked against a real Prometheus). A cumulative series sent again, or to a restarted
receiver, is not counted twice; a wrong token, a body that is not an export and a point without buckets change
nothing but what they should."""

from __future__ import annotations

import gzip
import json
import math
from urllib.parse import urlsplit

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.sdk.metrics import Histogram, MeterProvider
from opentelemetry.sdk.metrics.export import AggregationTemporality, MetricExportResult, PeriodicExportingMetricReader
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from planner.simulator import running_simulator
from planner.sources.otlp import receiver_app
from planner.sources.otlp_metrics import Buckets, TtftPoint, add_buckets, gained, histogram_quantile
from planner.store.otlp_metrics import SeriesState, load_hour_buckets, load_series_states
from planner.store.source_hours import load_hours
from planner.store.sources import HOUR_MS, SourceKind, add_source, get_source, remove_source

# Each module that starts a real Prometheus runs on one xdist worker: two at once would compete for the same cores.
pytestmark = pytest.mark.xdist_group("prometheus")

TTFT = "gen_ai.server.time_to_first_token"
T0_NS = 1_794_819_600_000_000_000  # 2026-11-16 09:00 UTC
HOUR0 = T0_NS // 1_000_000
TOKEN = "s3cret-token"
BOUNDS_S = [0.05, 0.1, 0.2, 0.5, 1.0]
BOUNDS_MS = (50.0, 100.0, 200.0, 500.0, 1000.0)

# Two models' TTFTs (s), and the buckets (…50, …100, …200, …500, …1000, +Inf ms) they fall in, by hand:
CLAUDE = [0.03] * 2 + [0.08] * 6 + [0.15] * 8 + [0.4] * 2 + [2.0] * 2  # 2, 6, 8, 2, 0, 2
GPT = [0.07] * 4 + [0.3] * 6  # 0, 4, 0, 6, 0, 0
# claude: cumulative 2 8 16 18 18 20. p50: rank 10 in (100, 200]: 100 + 100·(10−8)/8 = 125. p95: rank 19 is past
# every finite bucket (18): the highest finite bound, 1000.
# gpt: cumulative 0 4 4 10 10 10. p50: rank 5 in (200, 500]: 200 + 300·(5−4)/6 = 250. p95: rank 9.5: 200 + 300·5.5/6
# = 475.
# both: 2, 10, 8, 8, 0, 2; cumulative 2 12 20 28 28 30. p50: rank 15 in (100, 200]: 100 + 100·3/8 = 137.5. p95: rank
# 28.5 is past 28: 1000.
EXPECTED = {"claude-sonnet-4-5": (20, 125.0, 1000.0), "gpt-4o": (10, 250.0, 475.0), "": (30, 137.5, 1000.0)}


# --- the quantile rule ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("q", "bounds", "counts", "expected"),
    [
        (0.5, BOUNDS_MS, (2, 6, 8, 2, 0, 2), 125.0),
        (0.95, BOUNDS_MS, (2, 6, 8, 2, 0, 2), 1000.0),  # in +Inf: the highest finite bound
        (0.4, BOUNDS_MS, (2, 6, 8, 2, 0, 2), 100.0),  # rank 8 ends the second bucket exactly
        (0.05, BOUNDS_MS, (2, 6, 8, 2, 0, 2), 25.0),  # rank 1 in the first bucket, which starts at 0
        (0.95, BOUNDS_MS, (0, 4, 0, 6, 0, 0), 475.0),
        (0.5, (0.0, 10.0), (3, 1, 0), 0.0),  # a first bucket whose bound is ≤ 0 gives that bound
        (0.5, (10.0,), (0, 5), 10.0),  # everything in +Inf
        (0.5, BOUNDS_MS, (0, 0, 0, 0, 0, 0), None),  # no observations: Prometheus' NaN
        (0.5, (), (7,), None),  # no finite bound
    ],
)
def test_histogram_quantile_is_worked_out_by_hand(q, bounds, counts, expected):
    got = histogram_quantile(q, bounds, counts)
    assert got == (None if expected is None else pytest.approx(expected))


def test_histogram_quantile_refuses_what_is_not_a_histogram():
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        histogram_quantile(1.5, (1.0,), (1, 1))
    with pytest.raises(ValueError, match="need 2 counts"):
        histogram_quantile(0.5, (1.0,), (1,))


def test_histogram_quantile_is_what_a_real_prometheus_computes():
    """A real Prometheus scrapes the same buckets (cumulative, in s) and answers histogram_quantile for each."""
    cases = {
        "two_models": (BOUNDS_S, [2, 10, 8, 8, 0, 2]),
        "claude": (BOUNDS_S, [2, 6, 8, 2, 0, 2]),
        "tail": ([0.1, 0.25], [1, 0, 9]),
        "zero_first": ([0.0, 0.5, 2.0], [3, 4, 5, 1]),
        "uneven": ([0.001, 0.005, 0.02, 0.08, 0.3, 1.2, 5.0], [1, 3, 17, 40, 22, 9, 4, 1]),
    }
    lines = ["# TYPE ttft_seconds histogram"]
    for case, (bounds, counts) in cases.items():
        total = 0
        for le, c in zip([*map(str, bounds), "+Inf"], counts, strict=True):
            total += c
            lines.append(f'ttft_seconds_bucket{{case="{case}",le="{le}"}} {total}')
        lines += [f'ttft_seconds_sum{{case="{case}"}} 1', f'ttft_seconds_count{{case="{case}"}} {total}']
    page = "\n".join(lines) + "\n"
    app = Starlette(routes=[Route("/metrics", lambda _: PlainTextResponse(page))])
    from tests.support.prometheus import running_prometheus
    from tests.support.waiting import wait_for

    with running_simulator(app=app) as base, running_prometheus([urlsplit(base).netloc]) as prom:
        for q in (0.05, 0.25, 0.5, 0.9, 0.95, 0.99):

            def answer(q: float = q) -> dict[str, float] | None:
                got = httpx.get(
                    f"{prom}/api/v1/query", params={"query": f"histogram_quantile({q}, ttft_seconds_bucket)"}
                ).json()["data"]["result"]
                values = {r["metric"]["case"]: float(r["value"][1]) for r in got}
                return values if len(values) == len(cases) else None

            theirs = wait_for(answer, timeout_s=60, what="Prometheus answering for every case")
            for case, (bounds, counts) in cases.items():
                ours = histogram_quantile(q, bounds, counts)
                assert ours == pytest.approx(theirs[case], rel=1e-9), (q, case)


# --- merging and temporality (pure) ---------------------------------------------------------------------------------


def test_buckets_with_other_bounds_are_added_on_the_bounds_they_share():
    a = Buckets((100.0, 200.0, 500.0), (1, 2, 3, 4))
    b = Buckets((100.0, 250.0, 500.0), (10, 20, 30, 40))
    assert add_buckets(a, b) == Buckets((100.0, 500.0), (11, 55, 44))  # nothing split: (100, 500] holds 2+3, 20+30
    assert add_buckets(a, Buckets((100.0, 200.0, 500.0), (1, 1, 1, 1))) == Buckets((100.0, 200.0, 500.0), (2, 3, 4, 5))
    assert add_buckets(None, b) == b
    assert add_buckets(a, Buckets((300.0,), (1, 1))) is None  # no finite bound in common


def _point(counts, *, start_ns=T0_NS, at_ns=T0_NS + 60_000_000_000, bounds=BOUNDS_MS):
    return TtftPoint("k", "m", start_ns, at_ns, True, Buckets(tuple(bounds), tuple(counts)))


def test_a_cumulative_point_adds_what_its_series_gained_and_a_reset_adds_its_counts():
    last = SeriesState(T0_NS, T0_NS + 60_000_000_000, Buckets(BOUNDS_MS, (1, 2, 3, 0, 0, 0)).to_json())
    later = T0_NS + 120_000_000_000
    assert gained(None, _point((1, 2, 3, 0, 0, 0))).counts == (1, 2, 3, 0, 0, 0)  # first seen: all of it
    assert gained(last, _point((2, 2, 5, 1, 0, 0), at_ns=later)).counts == (1, 0, 2, 1, 0, 0)
    assert gained(last, _point((2, 2, 5, 1, 0, 0))) is None  # no later than the last point: a repeat
    assert gained(last, _point((9, 9, 9, 9, 9, 9), start_ns=T0_NS - 1, at_ns=later)) is None  # an earlier life
    restarted = _point((0, 1, 0, 0, 0, 0), start_ns=T0_NS + 90_000_000_000, at_ns=later)
    assert gained(last, restarted).counts == (0, 1, 0, 0, 0, 0)  # a new start: a reset
    assert gained(last, _point((0, 1, 0, 0, 0, 0), at_ns=later)).counts == (0, 1, 0, 0, 0, 0)  # a count went down
    other = _point((4, 0, 0), at_ns=later, bounds=(10.0, 20.0))
    assert gained(last, other).counts == (4, 0, 0)  # other bounds: a reset


# --- the real SDK against the receiver ------------------------------------------------------------------------------


@pytest.fixture
def source(engine):
    return add_source(engine, "agents", SourceKind.OTLP, "OTLP_TOKEN_OF_THE_TEST")


@pytest.fixture
def receiver(engine, source):
    with running_simulator(app=receiver_app(engine, source, TOKEN)) as base:  # serves any app; base ends in /v1
        yield f"{base}/metrics"


class _Sdk:
    """A MeterProvider whose TTFT histogram exports to `url` through the SDK's OTLP/HTTP (protobuf) exporter only
    when flushed; each export's result is kept."""

    def __init__(self, url: str, token: str, temporality: AggregationTemporality, gzip_body: bool = False) -> None:
        self.results: list[MetricExportResult] = []
        results = self.results

        class Recording(OTLPMetricExporter):
            def export(self, metrics_data, timeout_millis=10_000, **kwargs):
                results.append(super().export(metrics_data, timeout_millis=timeout_millis, **kwargs))
                return results[-1]

        exporter = Recording(
            endpoint=url,
            headers={"Authorization": f"Bearer {token}"},
            preferred_temporality={Histogram: temporality},
            compression=Compression.Gzip if gzip_body else Compression.NoCompression,
        )
        self.reader = PeriodicExportingMetricReader(exporter, export_interval_millis=math.inf)
        self.provider = MeterProvider(metric_readers=[self.reader])
        self.ttft = self.provider.get_meter("genai-agent").create_histogram(
            TTFT, unit="s", explicit_bucket_boundaries_advisory=BOUNDS_S
        )

    def record(self, values_s: list[float], key: str, model: str) -> None:
        for v in values_s:
            self.ttft.record(v, {key: model, "gen_ai.operation.name": "chat"})

    def flush(self) -> MetricExportResult:
        assert self.reader.force_flush()
        return self.results[-1]

    def close(self) -> None:
        self.provider.shutdown()


def _total(engine, source_id: int, model: str = "") -> float:
    return sum(h.requests for h in load_hours(engine, source_id, model=model))


@pytest.mark.parametrize(
    ("temporality", "gzip_body"),
    [(AggregationTemporality.DELTA, False), (AggregationTemporality.CUMULATIVE, True)],
    ids=["delta", "cumulative-gzip"],
)
def test_the_sdk_s_ttft_histogram_is_kept_per_hour_and_model(engine, source, receiver, temporality, gzip_body):
    sdk = _Sdk(receiver, TOKEN, temporality, gzip_body)
    sdk.record(CLAUDE, "gen_ai.request.model", "claude-sonnet-4-5")
    sdk.record(GPT, "gen_ai.response.model", "gpt-4o")
    assert sdk.flush() is MetricExportResult.SUCCESS
    sdk.close()
    for model, (n, p50, p95) in EXPECTED.items():
        [hour] = load_hours(engine, source, model=model)  # one export: one hour, whichever it is
        assert (hour.requests, hour.p50_ms, hour.p95_ms) == (n, pytest.approx(p50), pytest.approx(p95)), model
        kept = json.loads(load_hour_buckets(engine, source, hour.hour_start_ms, model) or "{}")
        assert kept["bounds_ms"] == list(BOUNDS_MS) and sum(kept["counts"]) == n
    assert get_source(engine, "agents").last_error is None


def test_a_cumulative_series_sent_again_and_to_a_restarted_receiver_is_not_counted_twice(engine, source):
    app = receiver_app(engine, source, TOKEN)
    with running_simulator(app=app) as base:
        url, port = f"{base}/metrics", urlsplit(base).port
        sdk = _Sdk(url, TOKEN, AggregationTemporality.CUMULATIVE)
        sdk.record(CLAUDE, "gen_ai.request.model", "claude-sonnet-4-5")
        assert sdk.flush() is MetricExportResult.SUCCESS
        assert sdk.flush() is MetricExportResult.SUCCESS  # the same cumulative counts again
        assert _total(engine, source) == 20
    # a new receiver on the same store and port: what it knows of the series comes from the store
    with running_simulator(app=receiver_app(engine, source, TOKEN), port=port):
        assert sdk.flush() is MetricExportResult.SUCCESS
        assert _total(engine, source) == 20 and _total(engine, source, "claude-sonnet-4-5") == 20
        sdk.record(GPT, "gen_ai.request.model", "claude-sonnet-4-5")  # 10 more of the same series
        assert sdk.flush() is MetricExportResult.SUCCESS
        sdk.close()  # shutting down exports the cumulative counts once more
    assert _total(engine, source) == 30 and _total(engine, source, "claude-sonnet-4-5") == 30
    assert len(load_series_states(engine, source)) == 1
    remove_source(engine, "agents")  # the series go with their source
    assert load_series_states(engine, source) == {}


def test_a_wrong_token_is_refused_and_stores_nothing(engine, source, receiver):
    sdk = _Sdk(receiver, "wrong", AggregationTemporality.DELTA)
    sdk.record(CLAUDE, "gen_ai.request.model", "claude-sonnet-4-5")
    assert sdk.flush() is MetricExportResult.FAILURE
    sdk.close()
    refused = httpx.post(receiver, content=b"{}", headers={"content-type": "application/json"})
    assert refused.status_code == 401
    assert load_hours(engine, source) == [] and load_series_states(engine, source) == {}


# --- OTLP bodies by hand --------------------------------------------------------------------------------------------

AUTH = {"Authorization": f"Bearer {TOKEN}"}
JSON = {**AUTH, "content-type": "application/json"}


def _pt(counts, *, at_ns=T0_NS + 60_000_000_000, start_ns=T0_NS, model="m", bounds=BOUNDS_S):
    return {
        "startTimeUnixNano": str(start_ns),
        "timeUnixNano": str(at_ns),
        "count": str(sum(counts)),
        "bucketCounts": [str(c) for c in counts],
        "explicitBounds": list(bounds),
        "attributes": [{"key": "gen_ai.request.model", "value": {"stringValue": model}}],
    }


def _export(points, *, unit="s", temporality=1, others=()):
    metric = {"name": TTFT, "unit": unit, "histogram": {"dataPoints": points, "aggregationTemporality": temporality}}
    return {
        "resourceMetrics": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "agent"}}]},
                "scopeMetrics": [{"scope": {"name": "genai"}, "metrics": [metric, *others]}],
            }
        ]
    }


def _post(url, export, headers=JSON) -> httpx.Response:
    return httpx.post(url, content=json.dumps(export), headers=headers)


def test_a_body_that_is_not_an_export_is_a_400_and_stores_nothing(engine, source, receiver):
    assert _post(receiver, _export([_pt([1, 0, 0, 0, 0, 0])])).status_code == 200
    before = load_hours(engine, source)
    bad = httpx.post(receiver, content=b'{"resourceMetrics": [', headers=JSON)
    assert bad.status_code == 400 and "not JSON" in bad.json()["message"]
    shape = httpx.post(receiver, content=b'{"resourceMetrics": {"scopeMetrics": []}}', headers=JSON)
    assert shape.status_code == 400 and "no resourceMetrics list" in shape.json()["message"]
    listed = httpx.post(receiver, content=b"[1, 2]", headers=JSON)
    assert listed.status_code == 400 and "not an OTLP metrics export" in listed.json()["message"]
    junk = httpx.post(receiver, content=b"\x0a\xff\xff", headers={**AUTH, "content-type": "application/x-protobuf"})
    assert junk.status_code == 400 and "not an OTLP protobuf metrics export" in junk.json()["message"]
    zipped = httpx.post(receiver, content=b"not gzip", headers={**JSON, "content-encoding": "gzip"})
    assert zipped.status_code == 400 and "not gzip" in zipped.json()["message"]
    assert load_hours(engine, source) == before


def test_a_gzip_body_that_unzips_past_the_limit_is_refused(engine, source, receiver):
    from planner.sources.otlp import MAX_UNZIPPED_BYTES

    bomb = gzip.compress(b" " * (MAX_UNZIPPED_BYTES + 1))  # a few hundred kB sent
    got = httpx.post(receiver, content=bomb, headers={**JSON, "content-encoding": "gzip"})
    assert got.status_code == 413 and "unzips to over" in got.json()["message"]
    assert load_hours(engine, source) == []


def test_a_point_without_buckets_is_rejected_and_the_rest_stored(engine, source, receiver):
    no_buckets = {k: v for k, v in _pt([0, 0, 0, 0, 0, 0]).items() if k not in ("bucketCounts", "explicitBounds")}
    other = {"name": "gen_ai.client.operation.duration", "unit": "s", "gauge": {"dataPoints": [{"asDouble": 1.0}]}}
    export = _export([_pt([0, 3, 1, 0, 0, 0]), no_buckets, _pt([1, 1, 0, 0, 0, 0], model="n")], others=[other])
    got = _post(receiver, export)
    assert got.status_code == 200
    partial = got.json()["partialSuccess"]
    assert partial["rejectedDataPoints"] == 1 and "point 1: no buckets" in partial["errorMessage"]
    assert [(h.hour_start_ms, h.requests) for h in load_hours(engine, source)] == [(HOUR0, 6)]
    assert [h.requests for h in load_hours(engine, source, model="m")] == [4]
    quiet = _post(receiver, _export([], others=[other]))  # other metrics are ignored, not rejected
    assert quiet.status_code == 200 and quiet.json() == {"partialSuccess": {}}


def test_the_metric_in_ms_is_read_as_ms_and_another_unit_or_kind_is_rejected(engine, source, receiver):
    ms = _post(receiver, _export([_pt([0, 2, 0, 0, 0, 0], bounds=[b * 1000 for b in BOUNDS_S])], unit="ms"))
    s = _post(receiver, _export([_pt([0, 2, 0, 0, 0, 0])]))
    assert ms.json() == s.json() == {"partialSuccess": {}}
    [hour] = load_hours(engine, source)
    assert (hour.requests, hour.p50_ms) == (4, 75.0)  # one histogram: the bounds in ms and in s are the same
    us = _post(receiver, _export([_pt([1, 0, 0, 0, 0, 0])], unit="us")).json()["partialSuccess"]
    assert us["rejectedDataPoints"] == 1 and "unit 'us'" in us["errorMessage"]
    expo = {"name": TTFT, "unit": "s", "exponentialHistogram": {"dataPoints": [{}, {}], "aggregationTemporality": 1}}
    got = _post(receiver, {"resourceMetrics": [{"scopeMetrics": [{"metrics": [expo]}]}]}).json()["partialSuccess"]
    assert got["rejectedDataPoints"] == 2 and "exponentialHistogram" in got["errorMessage"]
    assert [h.requests for h in load_hours(engine, source)] == [4]


def test_cumulative_resets_and_repeats_over_json(engine, source, receiver):
    minute = 60_000_000_000
    seq = [
        _pt([1, 2, 0, 0, 0, 0], at_ns=T0_NS + minute),  # first seen: 3
        _pt([1, 2, 0, 0, 0, 0], at_ns=T0_NS + minute),  # the same point again: nothing
        _pt([2, 4, 1, 0, 0, 0], at_ns=T0_NS + 2 * minute),  # gained 4
        _pt([0, 1, 0, 0, 0, 0], at_ns=T0_NS + 3 * minute),  # a count went down: a reset, 1
        _pt([0, 0, 2, 0, 0, 0], at_ns=T0_NS + HOUR_MS * 1_000_000, start_ns=T0_NS + 4 * minute),  # new start: 2
    ]
    for p in seq:
        assert _post(receiver, _export([p], temporality=2)).json() == {"partialSuccess": {}}
    assert [(h.hour_start_ms, h.requests) for h in load_hours(engine, source)] == [(HOUR0, 8), (HOUR0 + HOUR_MS, 2)]
    assert _post(receiver, _export([seq[2]], temporality=2)).status_code == 200  # an older point: nothing
    assert _total(engine, source) == 10
    unspecified = _post(receiver, _export([seq[0]], temporality=0)).json()["partialSuccess"]
    assert unspecified["rejectedDataPoints"] == 1 and "neither delta nor cumulative" in unspecified["errorMessage"]


def test_a_point_with_other_bounds_is_added_on_the_shared_ones_or_rejected(engine, source, receiver):
    assert _post(receiver, _export([_pt([0, 1, 2, 3, 0, 0])])).status_code == 200  # (…50, …100, …200, …500, …1000)
    coarse = _pt([1, 2, 3], bounds=[0.1, 0.5])  # shares 100 and 500 ms
    assert _post(receiver, _export([coarse])).json() == {"partialSuccess": {}}
    kept = json.loads(load_hour_buckets(engine, source, HOUR0, "m") or "{}")
    assert kept == {"bounds_ms": [100.0, 500.0], "counts": [1 + 1, 5 + 2, 3]}
    [hour] = load_hours(engine, source, model="m")
    assert (hour.requests, hour.p50_ms) == (12, pytest.approx(100 + 400 * (6 - 2) / 7))
    apart = _post(receiver, _export([_pt([1, 1], bounds=[0.3])])).json()["partialSuccess"]
    assert apart["rejectedDataPoints"] == 1 and "share none" in apart["errorMessage"]
    assert _total(engine, source) == 12 and _total(engine, source, "m") == 12  # neither row took it


def test_a_protobuf_export_gets_a_protobuf_answer_with_its_partial_success(engine, source, receiver):
    from google.protobuf.json_format import ParseDict
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
        ExportMetricsServiceRequest,
        ExportMetricsServiceResponse,
    )

    export = _export([_pt([0, 1, 0, 0, 0, 0]), _pt([1, 1, 1, 1, 1, 1, 1])])  # the second: one count too many
    body = ParseDict(export, ExportMetricsServiceRequest()).SerializeToString()
    got = httpx.post(
        receiver,
        content=gzip.compress(body),
        headers={**AUTH, "content-type": "application/x-protobuf", "content-encoding": "gzip"},
    )
    assert got.status_code == 200 and got.headers["content-type"] == "application/x-protobuf"
    answer = ExportMetricsServiceResponse.FromString(got.content)
    assert answer.partial_success.rejected_data_points == 1
    assert "need 6 bucketCounts, not 7" in answer.partial_success.error_message
    assert _total(engine, source) == 1


def test_exports_arriving_at_once_are_all_added(engine, source, receiver):
    """Each export's read-modify-write of an hour holds the source's lock: none overwrites another's counts."""
    from concurrent.futures import ThreadPoolExecutor

    def send(i: int) -> int:
        return _post(receiver, _export([_pt([0, 1, 0, 0, 0, 0], model=f"m{i % 2}")])).status_code

    with ThreadPoolExecutor(8) as pool:
        assert set(pool.map(send, range(24))) == {200}
    assert _total(engine, source) == 24 and _total(engine, source, "m0") == _total(engine, source, "m1") == 12


def test_an_export_while_the_store_is_locked_is_retried_by_the_sdk_and_added_once(sqlite_store_url, monkeypatch):
    """The store write-locked: the SDK's metrics export is answered 503 with Retry-After and nothing is added; the
    SDK sends it again and, the lock released, the hour holds its 20 requests once."""
    import logging
    import threading

    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from planner.store import database, open_store
    from tests.support.store_lock import sqlite_write_lock

    monkeypatch.setattr(database, "SQLITE_BUSY_TIMEOUT_MS", 200)  # a locked write fails after 0.2 s, not 5 s
    engine = open_store(sqlite_store_url)
    sid = add_source(engine, "agents", SourceKind.OTLP, "OTLP_TOKEN_OF_THE_TEST")
    memory = InMemoryMetricReader(preferred_temporality={Histogram: AggregationTemporality.DELTA})
    provider = MeterProvider(metric_readers=[memory])
    meter = provider.get_meter("genai-agent")
    ttft = meter.create_histogram(TTFT, unit="s", explicit_bucket_boundaries_advisory=BOUNDS_S)
    for v in CLAUDE:
        ttft.record(v, {"gen_ai.request.model": "claude-sonnet-4-5"})
    data = memory.get_metrics_data()
    provider.shutdown()
    answered = threading.Event()

    class Retrying(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "retrying" in record.getMessage():
                answered.set()

    sdk_log = logging.getLogger("opentelemetry.exporter.otlp.proto.http.metric_exporter")
    handler = Retrying(logging.WARNING)
    sdk_log.addHandler(handler)
    result: list[MetricExportResult] = []
    try:
        with (
            running_simulator(app=receiver_app(engine, sid, TOKEN)) as base,
            sqlite_write_lock(sqlite_store_url) as release,
        ):
            exporter = OTLPMetricExporter(
                endpoint=f"{base}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=600
            )
            sender = threading.Thread(target=lambda: result.append(exporter.export(data, timeout_millis=600_000)))
            sender.start()
            while not answered.wait(0.05) and sender.is_alive():
                pass  # until the receiver has answered the locked export (or the SDK gave up)
            added_while_locked = _total(engine, sid)
            release.set()
            sender.join(600)  # a hang guard, not a speed check
            exporter.shutdown()
    finally:
        sdk_log.removeHandler(handler)
    assert added_while_locked == 0 and answered.is_set()
    assert result == [MetricExportResult.SUCCESS]
    assert _total(engine, sid) == 20 and _total(engine, sid, "claude-sonnet-4-5") == 20
    engine.dispose()
