"""AppTest: a first-time visitor's worksheet links each figure to the page that measures it, until one is measured."""

from __future__ import annotations

from urllib.parse import unquote_plus

from planner.worksheet.budget import Worksheet
from planner.worksheet.first_step import MEASURED_ON
from planner.worksheet.provenance import Figure, Source
from planner.worksheet.url import query_for
from tests.app.conftest import new_app


def _links(at) -> dict[str, str]:
    """label → the url path of the page each page link opens."""
    return {link.proto.label: link.proto.page for link in at.get("page_link")}


def test_a_first_visit_links_every_figure_to_the_page_that_measures_it(app):
    app.run()
    assert not app.exception, app.exception
    links = _links(app)
    for where in MEASURED_ON:
        label = next((k for k in links if k.startswith(f"{where.label} → {where.page_title}")), None)
        assert label is not None, (where, links)
        assert links[label] == where.page
    assert {"Admission / queueing", "Weight loading (cold start)", "Network"} <= {k.split(" → ")[0] for k in links}


def test_the_guide_steps_aside_once_a_figure_is_measured():
    ws = Worksheet(queue_ms=Figure(35.0, "ms", Source.PROBE, detail="sim", n=200, window="7 days"))
    at = new_app()
    for part in query_for(ws, {"inline", "chat", "agent"}).split("&"):
        k, v = part.split("=")
        at.query_params[k] = unquote_plus(v)
    at.run()
    assert not at.exception, at.exception
    assert at.number_input(key="queue_ms").value == 35
    assert not any(" → " in label for label in _links(at))
