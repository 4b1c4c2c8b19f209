"""The typed vocabularies (StrEnums) store exactly the strings earlier versions stored, so old rows still read."""

from __future__ import annotations

import sqlalchemy as sa

from planner.endpoints import add_endpoint
from planner.probes.errors import ERROR_CLASSES, RTT_ERROR_CLASSES, ErrorClass, class_for_status
from planner.probes.ttft import TtftSample
from planner.samples import SampleKind
from planner.store.probes import insert_samples, sample_row
from planner.store.requests import RequestKind, RequestStatus, claim_requests, create_request, finish_request
from planner.store.worker import EndpointState, upsert_statuses


def _raw(engine, sql: str) -> list[tuple]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(sa.text(sql))]


def test_a_request_goes_pending_running_done_in_the_strings_the_pages_read(engine):
    ep = add_endpoint(engine, {"name": "e", "base_url": "http://127.0.0.1:9/v1", "model": "m"})
    req = create_request(engine, ep.id, RequestKind.COLD_READING, idle_s=5.0)
    assert _raw(engine, "SELECT kind, status FROM probe_request") == [("cold_reading", "pending")]
    [claimed] = claim_requests(engine, [ep.id], "", "host:1:x", 1_000)
    assert claimed["id"] == req and claim_requests(engine, [ep.id], "", "other:2:y", 1_001) == []  # claimed once
    assert _raw(engine, "SELECT status, claimed_by FROM probe_request") == [("running", "host:1:x")]
    finish_request(engine, req, RequestStatus.DONE, "cold 900 ms, warm 300 ms", 2_000)
    assert _raw(engine, "SELECT status, detail FROM probe_request") == [("done", "cold 900 ms, warm 300 ms")]


def test_endpoint_state_and_sample_kind_store_their_old_spellings(engine):
    ep = add_endpoint(engine, {"name": "e", "base_url": "http://127.0.0.1:9/v1", "model": "m"})
    upsert_statuses(engine, "", {ep.id: {"state": EndpointState.KEY_MISSING, "detail": "set ACME_KEY"}}, 1_000)
    assert _raw(engine, "SELECT state FROM endpoint_status") == [("key missing",)]
    failed = TtftSample(started_at_ms=1_000, ok=False, error_class=class_for_status(429), error_detail="HTTP 429")
    insert_samples(engine, [sample_row(failed, ep.id, "", SampleKind.MANUAL, 1_000)])
    assert _raw(engine, "SELECT kind, error_class FROM probe_sample") == [("manual", "rate_limited")]


def test_one_error_vocabulary_covers_ttft_and_rtt_and_reads_old_rows():
    assert set(ERROR_CLASSES) | set(RTT_ERROR_CLASSES) <= set(ErrorClass)
    assert ErrorClass("read_timeout") is ErrorClass.READ_TIMEOUT
    assert ErrorClass("blocked-port") is ErrorClass.BLOCKED_PORT
    assert EndpointState("key missing") is EndpointState.KEY_MISSING and SampleKind("skipped") is SampleKind.SKIPPED


def test_the_default_vantage_has_one_name_wherever_it_is_read():
    from planner.settings import DEFAULT_VANTAGE_NAME, vantage_name

    assert vantage_name("") == vantage_name(None) == vantage_name(float("nan")) == DEFAULT_VANTAGE_NAME
    assert vantage_name("office") == "office"
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[2]
    spelled = [
        str(p.relative_to(root))
        for d in ("app", "planner")
        for p in (root / d).rglob("*.py")
        if p.name != "settings.py" and "default vantage'" in p.read_text()
    ]
    assert not spelled, spelled  # no page or message spells it its own way ('default vantage', '(default)')
