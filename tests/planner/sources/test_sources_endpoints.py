"""Production requests mapped to a registered endpoint (planner.sources.by_endpoint): the base-URL rule, the model rule,
and the percentiles of the requests that map, over a window, equal planner.percentiles.summarize of exactly those
requests, stored through the store as a sync stores them."""

from __future__ import annotations

import pytest

from planner.endpoints.registry import add_endpoint
from planner.percentiles import summarize
from planner.sources.by_endpoint import (
    EndpointAddress,
    compare_cell,
    mapped_sources,
    model_matches,
    normalise_base_url,
    production_by_endpoint,
    production_for,
    production_ttft,
    same_base_url,
    users_p95_words,
)
from planner.store.sources import SourceKind, add_source, get_source, store_batch

T0 = 1_800_000_000_000  # a fixed instant (UTC epoch ms): nothing here reads the clock
MIN = 60_000


@pytest.mark.parametrize(
    ("api_base", "base_url"),
    [
        ("https://API.openai.com/v1/", "https://api.openai.com"),
        ("https://api.openai.com:443/v1", "https://api.openai.com/"),
        ("HTTP://Gpu-Box:80/v1", "http://gpu-box"),
        ("http://10.0.0.5:8000/v1/", "http://10.0.0.5:8000/v1"),
        ("http://10.0.0.5:8000/v1/chat/completions", "http://10.0.0.5:8000"),
        ("https://api.anthropic.com/v1/messages", "https://api.anthropic.com"),
        (
            "https://team.openai.azure.com/openai/deployments/gpt4o/chat/completions?api-version=2024-10-21",
            "https://team.openai.azure.com/openai/deployments/gpt4o",
        ),
        ("https://key:secret@api.example.com/v1", "https://api.example.com"),
        ("http://[::1]:8000/v1", "http://[::1]:8000"),
    ],
)
def test_the_same_base_url_however_it_was_written(api_base, base_url):
    assert same_base_url(api_base, base_url)
    assert normalise_base_url(api_base) == normalise_base_url(base_url)


@pytest.mark.parametrize(
    ("api_base", "base_url"),
    [
        ("http://10.0.0.5:8000/v1", "http://10.0.0.5:8001/v1"),  # another port
        ("http://api.example.com/v1", "https://api.example.com/v1"),  # another scheme
        ("https://api.example.com/v1", "https://api.example.com:8443/v1"),  # a port that is not the default
        ("https://api.example.com/openai/v1", "https://api.example.com/v1"),  # another path
        ("https://api.example.com/Team", "https://api.example.com/team"),  # paths keep their case
        ("https://eu.api.example.com", "https://api.example.com"),  # another host
        ("otlp", "otlp"),  # an OpenTelemetry span's stored API base is no URL: it names no endpoint
        ("", ""),
        ("ftp://api.example.com", "ftp://api.example.com"),
    ],
)
def test_a_different_base_url_does_not_match(api_base, base_url):
    assert not same_base_url(api_base, base_url)


def test_the_normal_form():
    assert normalise_base_url("https://API.openai.com/v1/") == "https://api.openai.com"
    assert normalise_base_url("http://Box:8000/serve/v1/completions/") == "http://box:8000/serve"
    assert normalise_base_url("otlp") is None
    assert normalise_base_url("http://host:notaport/v1") is None


@pytest.mark.parametrize(
    ("request_model", "endpoint_model", "same"),
    [
        ("gpt-4o-mini", "gpt-4o-mini", True),
        ("openai/gpt-4o-mini", "gpt-4o-mini", True),  # LiteLLM's provider/model
        ("hosted_vllm/meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-8B", True),
        ("openrouter/openai/gpt-4o", "openai/gpt-4o", True),
        ("gpt-4o", "gpt-4o-mini", False),
        ("openai/gpt-4o", "gpt-4o-mini", False),
        ("a/b/gpt-4o-mini", "gpt-4o-mini", False),  # one provider segment, not two
        ("gpt-4o-mini", "openai/gpt-4o-mini", False),  # the endpoint asks for the prefixed name: a bare one is not it
        ("", "gpt-4o-mini", False),  # a request without a model cannot be attributed
        ("anything", "", True),  # an endpoint without a model takes every model at its base URL
    ],
)
def test_the_model_rule(request_model, endpoint_model, same):
    assert model_matches(request_model, endpoint_model) is same


def _req(i: int, ts_ms: int, ttft_ms: float | None, *, base: str, model: str) -> dict:
    return {
        "request_id": f"r{i}",
        "ts_ms": ts_ms,
        "model": model,
        "api_base": base,
        "prompt_tokens": 100,
        "cached_tokens": 0,
        "output_tokens": 10,
        "ttft_ms": ttft_ms,
        "duration_ms": None if ttft_ms is None else ttft_ms + 500,
    }


def _seed(engine) -> list[float]:
    """Endpoint "chat" (https://api.example.com/v1, gpt-4o-mini) and three per-request sources with requests in and
    around the window [T0, T0 + 60 min); returns the TTFTs of the requests that map to "chat" inside it."""
    add_endpoint(engine, {"name": "chat", "base_url": "https://api.example.com/v1", "model": "gpt-4o-mini"})
    add_endpoint(engine, {"name": "other", "base_url": "https://other.example.com/v1", "model": "gpt-4o-mini"})
    proxy = add_source(engine, "prod-proxy", SourceKind.LITELLM, "PROXY_DSN")
    staging = add_source(engine, "staging-proxy", SourceKind.LITELLM, "STAGING_DSN")
    spans = add_source(engine, "spans", SourceKind.OTLP, "SPAN_TOKEN")
    add_source(engine, "engines", SourceKind.PROMETHEUS, "", url="http://127.0.0.1:9/")
    counted: list[float] = []
    rows = []
    for i in range(40):  # 40 in the window, through two spellings of the base URL and LiteLLM's model name
        ttft = 200.0 + 17.0 * ((i * 7) % 40)
        base = "https://API.example.com/v1/" if i % 2 else "https://api.example.com"
        rows.append(_req(i, T0 + i * MIN, ttft, base=base, model="openai/gpt-4o-mini" if i % 3 else "gpt-4o-mini"))
        counted.append(ttft)
    rows += [
        _req(100, T0 - 1, 9_000.0, base="https://api.example.com/v1", model="gpt-4o-mini"),  # just before
        _req(101, T0 + 60 * MIN, 9_000.0, base="https://api.example.com/v1", model="gpt-4o-mini"),  # the end: out
        _req(102, T0 + 5, 9_000.0, base="https://api.example.com/v1", model="gpt-4o"),  # another model
        _req(103, T0 + 6, 9_000.0, base="https://eu.example.com/v1", model="gpt-4o-mini"),  # another base URL
        _req(104, T0 + 7, None, base="https://api.example.com/v1", model="gpt-4o-mini"),  # no first token seen
        _req(105, T0 + 8, 9_000.0, base="https://api.example.com/v1", model=""),  # no model
    ]
    store_batch(engine, proxy, rows, None)
    staging_rows = [
        _req(i, T0 + 30 * MIN + i, 150.0 + i, base="https://api.example.com/", model="gpt-4o-mini") for i in range(5)
    ]
    store_batch(engine, staging, staging_rows, None)
    counted += [r["ttft_ms"] for r in staging_rows]
    # OpenTelemetry spans carry no base URL (stored as "otlp"): they map to no endpoint, whatever their model
    store_batch(engine, spans, [_req(i, T0 + i, 9_000.0, base="otlp", model="gpt-4o-mini") for i in range(30)], None)
    return counted


def test_the_production_p95_is_summarize_of_the_requests_that_map_in_the_window(sqlite_engine):
    counted = _seed(sqlite_engine)
    chat = EndpointAddress("https://api.example.com/v1", "gpt-4o-mini")
    prod = production_ttft(sqlite_engine, chat, T0, T0 + 60 * MIN)
    want = summarize(counted, (0.5, 0.95))
    assert prod.n == len(counted) == 45
    assert (prod.p95.value, prod.p50.value) == (want["p95"].value, want["p50"].value)
    assert prod.p95.reliable
    assert prod.sources == ("prod-proxy", "staging-proxy")  # by name; the spans and Prometheus never count
    # the bases of the requests that map in the window: the one without a TTFT (r104) too
    assert set(prod.api_bases) == {
        "https://api.example.com/v1",
        "https://API.example.com/v1/",
        "https://api.example.com",
        "https://api.example.com/",
    }
    assert (
        users_p95_words(prod)
        == f"Your users' p95: {want['p95'].value:,.0f} ms (45 requests via prod-proxy, staging-proxy)"
    )
    assert compare_cell(prod) == f"{want['p95'].value:,.0f} ms (n=45)"
    # an open window takes every stored request that maps (the two 9 s ones at the edges of the window too)
    assert production_ttft(sqlite_engine, chat).n == 47


def test_no_source_maps_is_none_and_a_window_without_requests_is_zero(sqlite_engine):
    _seed(sqlite_engine)
    other = EndpointAddress("https://other.example.com/v1", "gpt-4o-mini")
    assert production_for(sqlite_engine, other, T0, T0 + 60 * MIN) is None
    assert mapped_sources(sqlite_engine, other) == ()
    assert users_p95_words(None) is None and compare_cell(None) == "—"
    chat = EndpointAddress("https://api.example.com", "gpt-4o-mini")
    later = production_for(sqlite_engine, chat, T0 + 120 * MIN, T0 + 180 * MIN)
    assert later is not None and later.n == 0 and later.p95.value is None
    assert later.sources == ("prod-proxy", "staging-proxy")  # they map to it, just not in this window
    assert users_p95_words(later) == "Your users' p95: — (no requests in this window via prod-proxy, staging-proxy)"
    assert compare_cell(later) == "—"
    by_name = production_by_endpoint(sqlite_engine, ["chat", "other", "nope"], T0, T0 + 60 * MIN)
    assert by_name["other"] is None and by_name["nope"] is None
    chat_prod = by_name["chat"]
    assert chat_prod is not None and chat_prod.n == 45


def test_too_few_requests_say_so(sqlite_engine):
    add_endpoint(sqlite_engine, {"name": "chat", "base_url": "https://api.example.com/v1", "model": "m"})
    src = add_source(sqlite_engine, "prod-proxy", SourceKind.LITELLM, "PROXY_DSN")
    store_batch(
        sqlite_engine,
        src,
        [_req(i, T0 + i, 100.0 + i, base="https://api.example.com", model="m") for i in range(3)],
        None,
    )
    prod = production_ttft(sqlite_engine, EndpointAddress("https://api.example.com/v1", "m"), T0, T0 + MIN)
    assert prod.n == 3 and prod.p95.value == 102.0 and not prod.p95.reliable
    assert users_p95_words(prod) == "Your users' p95: 102 ms (too few) (3 requests via prod-proxy)"
    assert compare_cell(prod) == "102 ms (n=3) (too few)"
    assert get_source(sqlite_engine, "prod-proxy").n_requests == 3
