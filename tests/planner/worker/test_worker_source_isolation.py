"""The worker's source syncs, one source against the others: a Prometheus answering odd JSON or dripping its answer
is recorded on its own source, and the other sources sync on every pass (real Prometheus, real local servers)."""

from __future__ import annotations

import asyncio

import pytest

from planner.store.source_hours import production_hours
from planner.store.sources import SourceKind, add_source, get_source
from planner.worker.source_syncs import SourceSyncs
from tests.support.fake_clock import FakeClock
from tests.support.metrics_server import TWO_MODELS, exposition_server
from tests.support.prometheus import running_prometheus
from tests.support.prometheus_hostile import hostile_prometheus
from tests.support.worker_driver import until

# Each module that starts a real Prometheus runs on one xdist worker: two at once would compete for the same cores.
pytestmark = pytest.mark.xdist_group("prometheus")

PERIOD_S = 300.0


@pytest.fixture(scope="module")
def servers():
    """(a real Prometheus scraping two models, the hostile Prometheus)."""
    with exposition_server(TWO_MODELS) as target, running_prometheus([target]) as prom, hostile_prometheus() as bad:
        yield prom, bad


def _add(engine, name: str, url: str, model: str | None = None) -> int:
    add_source(engine, name, SourceKind.PROMETHEUS, "", url=url, profile="vllm", model_filter=model)
    return get_source(engine, name).id


def _waiting(engine, source_id: int) -> list[float | None]:
    return [h.waiting_mean for h in production_hours(engine, source_id)]


def test_an_odd_and_a_dripping_prometheus_leave_the_other_sources_syncing(servers, sqlite_engine):
    prom, bad = servers
    m1, m2 = _add(sqlite_engine, "m1", prom, "m1"), _add(sqlite_engine, "m2", prom, "m2")
    _add(sqlite_engine, "odd", bad.case("top-level list"))
    _add(sqlite_engine, "drip", f"{bad.base}/drip")
    clock = FakeClock()
    syncs = SourceSyncs(
        sqlite_engine, every_s=PERIOD_S, now_ms=lambda: clock.ms, holds_lease=lambda: True, poll_s=0.01, deadline_s=2
    )

    async def two_passes() -> None:
        task = asyncio.create_task(syncs.run())
        try:
            await until(lambda: syncs.passes >= 1, "a first pass over the sources")
            clock.advance(int(PERIOD_S * 1000))  # one period on: the drip's sync still runs
            await until(lambda: syncs.passes >= 2, "a second pass, one period on")
        finally:
            task.cancel()

    asyncio.run(two_passes())
    assert _waiting(sqlite_engine, m1) == [2.0] and _waiting(sqlite_engine, m2) == [10.0]
    assert get_source(sqlite_engine, "m1").last_error is None and get_source(sqlite_engine, "m2").last_error is None
    odd = get_source(sqlite_engine, "odd").last_error or ""
    assert odd.startswith(f"Prometheus at {bad.case('top-level list')} answered /api/v1/series with a JSON list")
    drip = get_source(sqlite_engine, "drip").last_error or ""
    assert drip.startswith("sync skipped: the previous one is still running (300 s)"), drip


def test_a_worker_whose_source_answers_odd_json_keeps_its_sources_task_and_syncs_the_rest(servers, sqlite_engine):
    """The sources task never dies for a source: no failure of the worker's tasks, every other source synced."""
    from tests.support.worker_driver import drive

    prom, bad = servers
    for i, case_id in enumerate(["top-level list", "value abc", "50k-deep JSON"]):
        _add(sqlite_engine, f"odd{i}", bad.case(case_id))
    m1 = _add(sqlite_engine, "m1", prom, "m1")

    async def body(worker):
        await until(lambda: worker.source_syncs.passes >= 1, "a first pass over the sources")
        return list(worker.task_failures)

    failures = drive(sqlite_engine, body, clock=FakeClock(), source_sync_s=PERIOD_S)
    assert failures == [] and _waiting(sqlite_engine, m1) == [2.0]
    for i in range(3):
        said = get_source(sqlite_engine, f"odd{i}").last_error or ""
        assert said.startswith("Prometheus at ") and "\n" not in said, said


def test_an_unexpected_error_in_one_sync_is_one_line_recorded_on_its_source(
    servers, sqlite_engine, caplog, monkeypatch
):
    """A bug a reader did not foresee (here a TypeError quoting the source's token): one masked line on the source
    and in the log, no traceback above debug, and the other source synced in the same pass."""
    from planner.sources.sync import sync_source

    prom, _ = servers
    monkeypatch.setenv("BUGGY_PROM_TOKEN", "sk-live-0123456789abcdef")
    add_source(sqlite_engine, "buggy", SourceKind.PROMETHEUS, "BUGGY_PROM_TOKEN", url=prom, profile="vllm")
    m1 = _add(sqlite_engine, "m1", prom, "m1")

    def sync(engine, source):
        if source.name == "buggy":
            raise TypeError("header 'Bearer sk-live-0123456789abcdef'\nis not a str")
        return sync_source(engine, source)

    syncs = SourceSyncs(sqlite_engine, every_s=PERIOD_S, now_ms=lambda: 0, holds_lease=lambda: True, sync=sync)
    with caplog.at_level("INFO", logger="planner.worker"):
        syncs.sync_all()
    said = get_source(sqlite_engine, "buggy").last_error
    assert said == "sync failed unexpectedly: TypeError: header 'Bearer ***' is not a str"
    assert _waiting(sqlite_engine, m1) == [2.0]
    logged = [r.getMessage() for r in caplog.records if "buggy" in r.getMessage()]
    assert logged == [f"source buggy: {said} (tried again next period)"]
    assert "Traceback" not in caplog.text and "sk-live" not in caplog.text
