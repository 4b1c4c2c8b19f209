"""One hostile corpus for every reader of outside data (issue 42): each case of tests/support/hostile/corpus.py is fed
to every reader of tests/support/hostile/readers.py that reads its kind of input (an HTTP body, a file, a database
row, an OTLP export), against real local servers, a real PostgreSQL and real files.

Each answer must be a clean refusal or a correct result (tests/support/hostile/outcome.py): no exception but the
project's own refusals (a traceback fails the test), no hang (each reader gets DEADLINE_S where it takes a deadline,
and every call is guarded by a thread join of GUARD_S that fails the test), no secret of the corpus in any output,
stored row or log line (as written and in every encoding tests/support/secret_forms.py knows). The memory-heavy cases
(huge bodies, bombs, endless files) run in a subprocess (tests/support/hostile/heavy.py) whose peak RSS must stay
within PEAK_RSS_BOUND_MB (the log reader: within its own 1 GB, READER_PEAK_RSS_BOUND_MB).

A (reader, case) that fails today is marked xfail(strict) in XFAILS with its owner and what fails, so the mark has to
go when the fix lands. The module's last lines in the terminal count the answers: refusals, results, tracebacks,
hangs, secrets found and the worst case's peak RSS.
"""

from __future__ import annotations

import collections
import os
import threading
from typing import Any

import pytest

from tests.planner.sources.test_sources_litellm import litellm_template  # noqa: F401 - the spend-log template fixture
from tests.support.hostile.corpus import BOMB_DIR_VARIABLE, CASES, ROW, SECRETS, gzip_bomb, zstd_bomb
from tests.support.hostile.files import release_pipes
from tests.support.hostile.heavy import run_heavy
from tests.support.hostile.litellm import Proxy
from tests.support.hostile.outcome import READ, REFUSED, WRONG, Env, Outcome
from tests.support.hostile.readers import READERS, pairs
from tests.support.secret_forms import leaks

DEADLINE_S = 0.5  # each reader's own deadline (s), where it takes one
GUARD_S = 20.0  # a hang guard, not a speed check: a call still running then has hung
PEAK_RSS_BOUND_MB = 400  # the peak RSS of a process reading a huge body or a bomb, its imports included
# A reader whose own documented budget is larger: the log reader reads a file past a 1.5 GB line (the huge file's hole
# of NULs) through DuckDB's CSV buffers (128 MiB each, one per thread), within the 1 GB it promises at 10 M rows
# (planner.logs.load.MEMORY_LIMIT, docs/benchmarks.md).
READER_PEAK_RSS_BOUND_MB = {"logs read_logs": 1000, "logs summarize": 1000}
KILL_RSS_MB = 2048  # a heavy case's process is killed here (so a runaway read cannot take the machine)

# (reader, case) → "owner: <area> — what fails"; each is xfail(strict=True): remove it when the fix lands
XFAILS: dict[tuple[str, str], str] = {}

TALLY: collections.Counter[str] = collections.Counter()
PEAK: dict[str, Any] = {"rss_mb": 0.0, "pair": None}


def _params() -> list[Any]:
    out = []
    for reader, case in pairs():
        marks: list[Any] = [pytest.mark.postgres] if READERS[reader].kind == ROW else []
        if case.heavy:  # on one worker: the heavy runner (every heavy pair, a module fixture) then runs once
            marks.append(pytest.mark.xdist_group("hostile-heavy"))
        why = XFAILS.get((reader, case.id))
        if why:
            marks.append(pytest.mark.xfail(strict=True, reason=why))
        out.append(pytest.param(reader, case.id, marks=marks, id=f"{reader}: {case.id}"))
    return out


@pytest.fixture(scope="module")
def bombs(tmp_path_factory):
    """The bombs, made once for this process and the heavy runner's."""
    os.environ[BOMB_DIR_VARIABLE] = str(tmp_path_factory.mktemp("bombs"))
    gzip_bomb(), zstd_bomb()
    yield
    del os.environ[BOMB_DIR_VARIABLE]


@pytest.fixture(scope="module")
def env(tmp_path_factory, bombs):
    made = Env(tmp_path_factory.mktemp("hostile"))
    yield made
    made.close()


@pytest.fixture(scope="module")
def proxy(pg_server, litellm_template):  # noqa: F811 - the fixture imported above
    """LiteLLM's spend-log database on the session's PostgreSQL, its password in the URL."""
    name = f"hostile_{os.getpid()}"
    url = pg_server.fresh_database(name, template=litellm_template)
    yield Proxy(url.replace("postgresql+psycopg://", "postgresql://").replace("planner@", "planner:s3cret-pw@"))
    pg_server.drop_database(name)


@pytest.fixture(scope="module")
def heavy(tmp_path_factory, bombs):
    """Every heavy pair, run once in the heavy runner (their tests share one xdist group, so one worker runs it)."""
    heavy_pairs = [(reader, case.id) for reader, case in pairs() if case.heavy]
    folder = tmp_path_factory.mktemp("heavy")
    return run_heavy(heavy_pairs, folder, deadline_s=DEADLINE_S, guard_s=GUARD_S, kill_rss_mb=KILL_RSS_MB)


@pytest.fixture(scope="module", autouse=True)
def _tally(request):
    yield
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None and TALLY:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(TALLY.items()))
        with capture.global_and_fixture_disabled():
            reporter.write_line(f"\nhostile corpus: {counts}; worst peak RSS {PEAK['rss_mb']:.0f} MB ({PEAK['pair']})")


def _guarded(env: Env, call: Any) -> list[Outcome]:
    """`call()` in a thread joined for GUARD_S: a hang fails the test; the call's exception is raised here."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - raised again in the test's thread
            box["error"] = exc

    thread = threading.Thread(target=run, name="hostile-reader", daemon=True)
    thread.start()
    thread.join(GUARD_S)
    if thread.is_alive():
        TALLY["hangs"] += 1
        release_pipes(list(env.tmp.rglob("*")))  # a reader blocked on a named pipe gets its end of file
        pytest.fail(f"hang: the reader did not return within {GUARD_S:g} s")
    if "error" in box:
        TALLY["tracebacks"] += 1
        raise box["error"]
    return box["value"]


def _heavy_outcomes(request: pytest.FixtureRequest, reader: str, case_id: str) -> list[Outcome]:
    result = request.getfixturevalue("heavy")[(reader, case_id)]
    if result.peak_rss_mb > PEAK["rss_mb"]:
        PEAK.update(rss_mb=result.peak_rss_mb, pair=f"{reader}: {case_id}")
    if result.killed:
        TALLY["hangs" if "within" in result.killed else "over the memory bound"] += 1
        pytest.fail(f"the heavy case was killed: {result.killed}")
    if result.error:
        TALLY["tracebacks"] += 1
        pytest.fail(f"a traceback:\n{result.error}")
    bound = READER_PEAK_RSS_BOUND_MB.get(reader, PEAK_RSS_BOUND_MB)
    if result.peak_rss_mb > bound:
        TALLY["over the memory bound"] += 1
    assert result.peak_rss_mb <= bound, f"peak RSS {result.peak_rss_mb:.0f} MB, over {bound} MB"
    return [Outcome(o["verdict"], o["said"], o["texts"][1:]) for o in result.outcomes]


@pytest.mark.parametrize(("reader", "case_id"), _params())
def test_every_reader_refuses_or_reads_every_hostile_case(reader, case_id, env, request):
    case = CASES[case_id]
    if READERS[reader].kind == ROW and env.proxy is None:
        env.proxy = request.getfixturevalue("proxy")
    mark = env.log_mark()
    if case.heavy:
        outcomes = _heavy_outcomes(request, reader, case_id)
    else:
        outcomes = _guarded(env, lambda: READERS[reader].read(case, env, DEADLINE_S))
    texts = [t for o in outcomes for t in o.texts] + [r.getMessage() for r in env.logged_since(mark)]
    found = leaks("\n".join(texts), SECRETS)
    TALLY["secrets found"] += len(found)
    for o in outcomes:
        TALLY[{REFUSED: "clean refusals", READ: "correct results", WRONG: "wrong answers"}[o.verdict]] += 1
    assert outcomes, "the reader gave no answer"
    assert not found, f"a secret in the output, a stored row or the log: {found}"
    wrong = [o.said for o in outcomes if o.verdict == WRONG]
    assert not wrong, wrong
