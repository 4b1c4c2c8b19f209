"""AppTest: one failing-endpoint rule (planner.endpoints.status) on every page — Endpoints, Probes and Compare warn
from FAILING_WARNING_AFTER failures in a row with the same sentence, and Compare names a refusing endpoint's failure
instead of asking to probe it for about a day; the Compare CSV's rank is a whole number."""

from __future__ import annotations

import csv
import io
import time

import pytest

from planner.compare import compare, report_csv
from planner.endpoints.status import FAILING_WARNING_AFTER
from planner.store import open_store
from planner.store.worker import EndpointState, upsert_statuses
from tests.app.conftest import open_page
from tests.support.compare_seed import seed_endpoint

REFUSED = "refused: could not open a TCP connection (refused or unreachable)"


def _endpoint_id(eng, name: str) -> int:
    from planner.endpoints.registry import get_endpoint

    ep = get_endpoint(eng, name)
    assert ep.id is not None
    return ep.id


def _report(eng, name: str, in_a_row: int) -> None:
    status = {"state": EndpointState.FAILING, "detail": REFUSED, "consecutive_failures": in_a_row}
    upsert_statuses(eng, "office", {_endpoint_id(eng, name): status}, int(time.time() * 1000))


def test_compare_names_a_refusing_endpoint_instead_of_asking_for_a_day(app):
    eng = open_store()
    seed_endpoint(eng, "fast-a", median_ms=300, n=200)
    seed_endpoint(eng, "dead", median_ms=300, n=0, errors=30, seed=2)
    _report(eng, "dead", 30)
    open_page("compare", app)
    app.multiselect(key="cmp_endpoints").set_value(["fast-a", "dead"]).run()
    assert not app.exception, app.exception
    warnings = [w.value for w in app.warning]
    assert any("dead @ office: 30 failures in a row — refused" in w for w in warnings), warnings
    assert not any("probe dead" in i.value or "dead for about a day" in i.value for i in app.info)


def test_the_compare_csv_ranks_in_whole_numbers_and_leaves_no_rank_empty():
    eng = open_store()
    seed_endpoint(eng, "fast-a", median_ms=300, n=200)
    seed_endpoint(eng, "dead", median_ms=300, n=0, errors=30, seed=2)
    rows = list(csv.DictReader(io.StringIO(report_csv(compare(eng, ["fast-a", "dead"])))))
    assert [(r["endpoint"], r["rank"]) for r in rows] == [("fast-a", "1"), ("dead", "")]


@pytest.mark.parametrize("in_a_row", [FAILING_WARNING_AFTER - 1, FAILING_WARNING_AFTER])
def test_endpoints_and_probes_warn_by_the_same_rule(app, in_a_row):
    eng = open_store()
    seed_endpoint(eng, "flaky", median_ms=300, n=40)
    _report(eng, "flaky", in_a_row)
    sentence = f"flaky @ office: {in_a_row} failures in a row — refused"
    for page in ("endpoints", "probes"):
        at = open_page(page)
        if page == "probes":  # the series the worker of vantage "office" reported on
            series = at.selectbox(key="probes_series")
            series.select_index(next(i for i, o in enumerate(series.options) if "office" in o)).run()
        warned = [w.value for w in at.warning if "failures in a row" in w.value or "Failing" in w.value]
        if in_a_row < FAILING_WARNING_AFTER:
            assert warned == [], (page, warned)  # one or two failures are a blip, on every page
        else:
            assert len(warned) == 1 and sentence in warned[0], (page, warned)
