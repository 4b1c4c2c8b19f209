"""The typed vocabularies (StrEnums) store exactly the strings earlier versions stored, so old rows still read."""

from __future__ import annotations

import sqlalchemy as sa

from planner.endpoints.registry import add_endpoint
from planner.endpoints.samples import SampleKind
from planner.probes.errors import ERROR_CLASSES, RTT_ERROR_CLASSES, ErrorClass, class_for_status
from planner.probes.ttft import TtftSample
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


# What rtt_sample.method holds and what app/components/browser_rtt.js sends; a renamed member fails here.
STORED_RTT_METHODS = ("dns", "tcp-connect", "tls", "https-ttfb", "resource-timing", "fetch-performance-now")
# What endpoint.protocol, endpoints.toml, assets/providers.toml, URLs and `--protocol` hold.
STORED_PROTOCOLS = (
    "openai-chat",
    "openai-completions",
    "anthropic",
    "openai-responses",
    "azure-openai",
    "gemini",
    "vertex",
    "bedrock",
)


def test_rtt_methods_keep_the_spellings_the_store_and_the_browser_component_use():
    import pathlib
    import re

    from planner.probes.rtt_browser import BROWSER_METHODS
    from planner.regions.catalog import RttMethod
    from planner.store.rtt import METHODS, RTT_METHOD_BY_SIDE

    assert tuple(m.value for m in RttMethod) == STORED_RTT_METHODS
    assert METHODS == STORED_RTT_METHODS and all(type(m) is str for m in METHODS)  # the error message's spelling
    assert RTT_METHOD_BY_SIDE == {"server": ("tcp-connect",), "browser": ("resource-timing", "fetch-performance-now")}
    js = (pathlib.Path(__file__).resolve().parents[2] / "app/components/browser_rtt.js").read_text()
    assert (
        set(re.findall(r'method: "([a-z-]+)"', js))
        == set(BROWSER_METHODS)
        == {
            "resource-timing",
            "fetch-performance-now",
        }
    )
    assert RttMethod("tcp-connect") is RttMethod.TCP_CONNECT


def test_rtt_samples_store_the_old_method_strings(engine):
    from planner.probes.rtt import RttResult
    from planner.probes.rtt_browser import records_from_browser
    from planner.store.rtt import insert_rtt_samples, rtt_summary

    server = RttResult(region_id="r", target="https://r.example/", started_at_ms=1_000, dns_ms=2.0, tls_ms=9.0)
    server.connect_ms, server.connect_at_ms, server.ttfb_ms = [5.0, 6.0], [1_001, 1_002], 12.0
    failed = RttResult(region_id="p", target="https://p.example/", started_at_ms=1_000)
    failed.error_class, failed.error_phase, failed.error_detail = ErrorClass.PROXY, "proxy", "proxy refused CONNECT"
    browser, rejected = records_from_browser(
        {
            "run_id": "b",
            "samples": [
                {"region_id": "r", "url": "https://r.example/", "method": "resource-timing", "rtt_ms": 7.0},
                {"region_id": "r", "url": "https://r.example/", "method": "fetch-performance-now", "rtt_ms": 8.0},
                {"region_id": "r", "url": "https://r.example/", "method": "tcp-connect", "rtt_ms": 1.0},
            ],
        },
        vantage="",
    )
    assert rejected == ["browser sample #3: method 'tcp-connect' is not a browser method"]
    insert_rtt_samples(engine, [*server.records(), *failed.records(), *browser])
    stored = _raw(engine, "SELECT side, method FROM rtt_sample ORDER BY id")
    assert stored == [
        ("server", "dns"),
        ("server", "tcp-connect"),
        ("server", "tcp-connect"),
        ("server", "tls"),
        ("server", "https-ttfb"),
        ("server", "tcp-connect"),  # a failed proxy is a failed TCP connect
        ("browser", "resource-timing"),
        ("browser", "fetch-performance-now"),
    ]
    summary = rtt_summary(engine)
    assert sorted(zip(summary["side"], summary["method"], strict=True)) == [
        ("browser", "resource-timing"),
        ("server", "tcp-connect"),
        ("server", "tcp-connect"),
    ]


def test_protocols_keep_the_spellings_the_store_the_catalog_and_the_cli_use(engine):
    from planner.cli.probe import probe
    from planner.endpoints.providers import catalog
    from planner.endpoints.registry import EDITABLE_FIELDS, PROTOCOLS, export_toml
    from planner.probes.protocols import ProbeProtocol
    from planner.store.endpoints import EndpointRow

    assert tuple(p.value for p in ProbeProtocol) == STORED_PROTOCOLS
    assert PROTOCOLS == STORED_PROTOCOLS and all(type(p) is str for p in PROTOCOLS)  # plain strings for the UI
    [option] = [p for p in probe.params if p.name == "protocol"]
    assert tuple(option.type.choices) == STORED_PROTOCOLS
    assert option.default == "openai-chat" and type(option.default) is str
    assert EDITABLE_FIELDS["protocol"][1] == EndpointRow().protocol == ProbeProtocol.OPENAI_CHAT
    assert {e.protocol for e in catalog()} <= set(STORED_PROTOCOLS)
    add_endpoint(engine, {"name": "a", "base_url": "http://127.0.0.1:9/v1", "model": "m", "protocol": "anthropic"})
    add_endpoint(engine, {"name": "b", "base_url": "http://127.0.0.1:9/v1", "model": "m", "protocol": "bedrock"})
    assert _raw(engine, "SELECT protocol FROM endpoint ORDER BY name") == [("anthropic",), ("bedrock",)]
    assert 'protocol = "anthropic"' in export_toml(engine)
    assert ProbeProtocol("azure-openai") is ProbeProtocol.AZURE_OPENAI
