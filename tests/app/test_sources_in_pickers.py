"""A Prometheus source keeps hours, not requests: the Logs, What-if and Capacity pickers offer the sources that hold
requests and never it, and `whatif --source` refuses it by name."""

from __future__ import annotations

from click.testing import CliRunner

from planner.cli import cli
from planner.store import open_store
from planner.store.source_hours import store_hours
from planner.store.sources import HOUR_MS, HourTtft, SourceKind, add_source, store_batch
from tests.app.conftest import open_page

T0 = 1_794_819_600_000  # 2026-11-16 09:00 UTC


def _seed() -> tuple[int, int]:
    eng = open_store()
    spans = add_source(eng, "spans", SourceKind.OTLP, "OTLP_TOKEN_OF_THE_PICKER_TEST")
    rows = [
        {
            "request_id": f"r{i}",
            "ts_ms": T0 + i * 60_000,
            "model": "m",
            "api_base": "otlp",
            "prompt_tokens": 1000 + i,
            "cached_tokens": 0,
            "output_tokens": 20,
            "ttft_ms": 200.0 + i,
            "duration_ms": 900.0,
        }
        for i in range(30)
    ]
    store_batch(eng, spans, rows, None)
    engines = add_source(eng, "engines", SourceKind.PROMETHEUS, "", url="http://prometheus:9090", profile="vllm")
    store_hours(
        eng, engines, [HourTtft(T0, 30.0, 120.0, 400.0, 0.5, 90.0), HourTtft(T0 + HOUR_MS, 0.0, None, None, 0.0)]
    )
    return spans, engines


def test_the_pickers_offer_request_sources_and_never_a_prometheus_one():
    spans, engines = _seed()
    logs = open_page("logs")
    offered = logs.selectbox(key="logs_stored").options
    assert any("spans" in o for o in offered) and not any("engines" in o for o in offered)
    whatif = open_page("whatif")
    assert any("spans" in o for o in whatif.selectbox(key="wi_source").options)
    assert not any("engines" in o for o in whatif.selectbox(key="wi_source").options)
    capacity = open_page("capacity")
    traffic = capacity.selectbox(key="cap_traffic").options
    assert any("spans" in o for o in traffic) and not any("engines" in o for o in traffic)


def test_whatif_refuses_a_prometheus_source_by_name(tmp_path):
    url = f"sqlite:///{tmp_path / 'planner.db'}"
    eng = open_store(url)
    add_source(eng, "engines", SourceKind.PROMETHEUS, "", url="http://prometheus:9090", profile="vllm")
    eng.dispose()
    from tests.support.cli_tree import SLS

    got = CliRunner().invoke(cli, ["whatif", "--source", "engines", "--deployment", SLS, "--database-url", url])
    assert got.exit_code == 2 and "engines is a Prometheus source: it keeps hours, not requests to replay" in got.output
