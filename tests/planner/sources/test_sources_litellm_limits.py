"""A LiteLLM database that never answers, or one too big for one sync, never holds a sync up for ever (issue 42,
item 8): connecting gives up with the host named and no password, and a sync stops after the page that crosses its
deadline, keeps what it read and says so; the next one resumes there."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from planner.sources import litellm
from planner.sources.sync import sync_source
from planner.store.sources import SourceKind, add_source, get_source, load_source_requests
from tests.planner.sources import test_sources_litellm as library_tests
from tests.planner.sources.test_sources_litellm import _insert, _requests, _source
from tests.support.black_hole import BlackHole
from tests.support.servers import full_backlog

litellm_template = library_tests.litellm_template
proxy_db = library_tests.proxy_db

RETURNS_WITHIN_S = 60  # a generous bound on a 10 s connect timeout: the test fails on a hang, never on speed
PASSWORD = "bl4ck-h0le-pw"


@contextmanager
def accepts_never_answers() -> Iterator[int]:
    """A port whose listener accepts and never sends a byte (a client's startup message waits for ever)."""
    with BlackHole() as hole:
        yield hole.port


def _outcomes(*calls: Callable[[], object]) -> list[BaseException | None]:
    """What each call raised (None: nothing), all run at once in threads that must end within RETURNS_WITHIN_S (a
    hang fails the test)."""
    got: dict[int, BaseException | None] = {}

    def run(i: int, call: Callable[[], object]) -> None:
        try:
            call()
            got[i] = None
        except BaseException as exc:  # noqa: BLE001 - handed to the test to assert on
            got[i] = exc

    threads = [threading.Thread(target=run, args=(i, c), daemon=True) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=RETURNS_WITHIN_S)
        assert not t.is_alive(), f"still waiting on a database that never answers after {RETURNS_WITHIN_S} s"
    return [got[i] for i in range(len(calls))]


@pytest.mark.parametrize(
    ("server", "query", "limit_s"),
    [(accepts_never_answers, "", 10), (full_backlog, "?connect_timeout=1", 1)],
    ids=["accepts-never-answers", "never-accepts-its-own-timeout"],
)
def test_a_database_that_never_answers_fails_the_sync_and_the_test_naming_its_host(
    sqlite_engine, server, query, limit_s, monkeypatch
):
    """The default connect timeout (10 s), or the URL's own where it gives one."""
    with server() as port:
        dsn = f"postgresql://reader:{PASSWORD}@127.0.0.1:{port}/litellm{query}"
        monkeypatch.setenv("BLACK_HOLE_DSN", dsn)
        add_source(sqlite_engine, "stuck", SourceKind.LITELLM, "BLACK_HOLE_DSN")
        src = get_source(sqlite_engine, "stuck")
        # a sync, and what `sources test` runs
        outcomes = _outcomes(lambda: sync_source(sqlite_engine, src), lambda: litellm.describe(litellm.connect(dsn)))
    for exc in outcomes:
        assert isinstance(exc, litellm.LiteLLMError)
        message = str(exc)
        assert f"127.0.0.1:{port}" in message and f"no answer within {limit_s} s" in message
        assert PASSWORD not in message
    last_error = get_source(sqlite_engine, "stuck").last_error or ""
    assert f"no answer within {limit_s} s" in last_error and PASSWORD not in last_error


class _StepClock:
    """A monotonic clock that moves `step_s` each time it is read: the deadline falls after a known page."""

    def __init__(self, step_s: float) -> None:
        self.now_s = 0.0
        self.step_s = step_s

    def __call__(self) -> float:
        reading = self.now_s
        self.now_s += self.step_s
        return reading


@pytest.mark.postgres
def test_a_sync_stops_after_the_page_that_crosses_its_deadline_and_the_next_one_resumes(
    sqlite_engine, proxy_db, monkeypatch
):
    _insert(proxy_db, _requests(55))
    src = _source(sqlite_engine, proxy_db, monkeypatch)
    # read once when the sync starts (0 s), then once after each page: 10, 20, 30 s; the deadline is 25 s
    first = sync_source(sqlite_engine, src, page_rows=10, deadline_s=25.0, clock=_StepClock(10.0))
    assert (first.pages, first.new) == (3, 30)
    assert first.stopped == "stopped after 3 pages at the deadline; resumes next sync"
    assert len(load_source_requests(sqlite_engine, src.id)) == 30  # what was read is kept

    rest = sync_source(sqlite_engine, get_source(sqlite_engine, "prod"), page_rows=10)
    assert rest.new == 25 and rest.stopped is None
    ids = [r["request_id"] for r in load_source_requests(sqlite_engine, src.id)]
    assert len(ids) == len(set(ids)) == 55
