"""Probe samples in the store: idempotent on the slot key,
manual endpoints for `probe --store` (SQLite + PostgreSQL)."""

from __future__ import annotations

import dataclasses

import pytest
from sqlmodel import select

from planner.probes.ttft import TtftSample
from planner.store import session
from planner.store.database import table_of
from planner.store.endpoints import EndpointRow, get_or_create_manual_endpoint
from planner.store.probes import ProbeSampleRow, insert_samples, sample_row


def sample(i: int, ok: bool = True) -> TtftSample:
    return TtftSample(
        started_at_ms=1_796_000_000_000 + i * 1000,
        ok=ok,
        error_class=None if ok else "rate_limited",
        error_detail=None if ok else "HTTP 429",
        status_code=200 if ok else 429,
        attempts=1 if ok else 3,
        ttft_ms=100.0 + i if ok else None,
        headers_ms=3.0,
        total_ms=900.0,
        output_tokens=64,
        prompt_tokens_requested=1000,
    )


def test_insert_is_idempotent_on_the_slot_key(engine):
    ep = get_or_create_manual_endpoint(engine, "http://127.0.0.1:8765/v1", "sim-model", "openai-chat")
    rows = [
        sample_row(sample(i, ok=i != 2), ep.id, "office-a", "scheduled", 1_796_000_000_000 + i * 60_000)
        for i in range(5)
    ]
    assert insert_samples(engine, rows) == 5
    again = [sample_row(sample(i), ep.id, "office-a", "scheduled", 1_796_000_000_000 + i * 60_000) for i in range(7)]
    assert insert_samples(engine, again) == 2  # only the two new slots
    assert insert_samples(engine, []) == 0
    with session(engine) as s:
        stored = s.exec(select(ProbeSampleRow).order_by(ProbeSampleRow.scheduled_at_ms)).all()
    assert len(stored) == 7
    assert stored[2].ok is False and stored[2].error_class == "rate_limited" and stored[2].attempts == 3
    assert stored[0].ttft_ms == 100.0  # the first insert wins; a re-sent slot does not overwrite it


def test_same_slot_from_another_vantage_or_kind_is_a_new_row(engine):
    ep = get_or_create_manual_endpoint(engine, "http://h/v1", "m", "anthropic")
    base = sample(0)
    rows = [sample_row(base, ep.id, v, k, 1_796_000_000_000) for v in ("a", "b") for k in ("scheduled", "cold")]
    assert insert_samples(engine, rows) == 4


def test_whole_and_fractional_milliseconds_in_one_batch_are_stored_as_given(engine):
    """A batch's figures arrive as ints or floats (5000 or 52.8 ms); every one is stored, on both back ends."""
    ep = get_or_create_manual_endpoint(engine, "http://127.0.0.1:8765/v1", "sim-model", "openai-chat")
    rows = [
        sample_row(dataclasses.replace(sample(i), ttft_ms=ttft), ep.id, "", "scheduled", 1_796_000_000_000 + i)
        for i, ttft in enumerate([52.8, 5000, 90])
    ]
    assert insert_samples(engine, rows) == 3
    with session(engine) as s:
        stored = s.exec(select(ProbeSampleRow.ttft_ms).order_by(ProbeSampleRow.scheduled_at_ms)).all()
    assert stored == [52.8, 5000.0, 90.0]


def test_manual_endpoint_is_created_once_and_never_scheduled(engine):
    a = get_or_create_manual_endpoint(
        engine, "http://127.0.0.1:8765/v1", "sim-model", "openai-chat", api_key_env="SIM_KEY"
    )
    b = get_or_create_manual_endpoint(engine, "http://127.0.0.1:8765/v1", "sim-model", "openai-chat")
    c = get_or_create_manual_endpoint(engine, "http://127.0.0.1:8765/v1", "sim-model", "anthropic")
    assert a.id == b.id != c.id
    assert a.enabled is False and a.provider == "manual" and a.api_key_env == "SIM_KEY"
    assert "sim-model" in a.name and len(a.name) <= 120
    long = get_or_create_manual_endpoint(engine, "https://example.com/" + "x" * 300, "m" * 150, "openai-chat")
    assert len(long.name) <= 120
    with session(engine) as s:
        assert len(s.exec(select(EndpointRow)).all()) == 3


def test_sample_row_rejects_an_unknown_kind():
    with pytest.raises(ValueError, match="kind"):
        sample_row(sample(0), 1, "", "nightly", 0)


def test_every_figure_a_probe_measures_is_a_probe_sample_column():
    # TtftSample (the probe, which knows nothing of the store) and ProbeSampleRow (the table) declare the same
    # measurements, once as a value and once as columns; sample_row copies every field, so none may go unstored.
    columns = {c.name for c in table_of(ProbeSampleRow).columns}
    assert {f.name for f in dataclasses.fields(TtftSample)} - columns == set()
