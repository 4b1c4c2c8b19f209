"""The region catalog (assets/regions.toml) is valid data, and custom targets parse or are refused clearly."""

from __future__ import annotations

import datetime as dt

import pytest

from planner.asset_files import load_asset
from planner.regions.catalog import CatalogError, catalog, find_region, merge_custom, parse_catalog, parse_target


def test_every_catalog_entry_parses_with_source_and_date_and_unique_id():
    regions = catalog()
    assert len(regions) >= 60
    assert len({r.id for r in regions}) == len(regions)
    for r in regions:
        assert r.source.strip() and dt.date.fromisoformat(r.as_of) <= dt.date(2027, 1, 1), r.id
        assert r.target.scheme in ("https", "http", "tcp"), r.id
        assert r.anycast or (r.lat is not None and r.lon is not None), r.id


def test_catalog_covers_the_major_clouds_and_flags_global_front_doors():
    providers = {r.provider for r in catalog()}
    assert {"AWS", "Google Cloud", "Azure", "OpenAI", "Anthropic"} <= providers
    assert find_region("openai-api").anycast and find_region("anthropic-api").anycast
    assert not find_region("aws-us-east-1").anycast
    assert find_region("aws-eu-west-1").probe_url == "https://dynamodb.eu-west-1.amazonaws.com/ping"


def test_unknown_region_suggests_close_ids():
    with pytest.raises(KeyError, match="aws-us-east-1"):
        find_region("us-east-1")


@pytest.mark.parametrize(
    "text, expected",
    [
        ("https://api.example.com/v1/models", ("https", "api.example.com", 443, "/v1/models")),
        ("http://10.0.0.1:8080/ping?x=1", ("http", "10.0.0.1", 8080, "/ping?x=1")),
        ("api.example.com:443", ("tcp", "api.example.com", 443, "/")),
        ("[2001:db8::1]:8443", ("tcp", "2001:db8::1", 8443, "/")),
    ],
)
def test_targets_parse(text, expected):
    t = parse_target(text)
    assert (t.scheme, t.host, t.port, t.path) == expected


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "URL"),
        ("api.example.com", "host:port"),
        ("ftp://example.com/", "scheme"),
        ("example.com:70000", "1–65535"),
        ("https://exa mple.com/", "host name"),
    ],
)
def test_bad_targets_say_what_is_wrong(text, message):
    with pytest.raises(CatalogError, match=message):
        parse_target(text)


def _doc(**overrides):
    base = {
        "id": "x-1",
        "provider": "P",
        "name": "N",
        "probe_url": "https://x.example/ping",
        "lat": 1.0,
        "lon": 2.0,
        "source": "docs",
        "as_of": "2026-01-01",
    }
    return {"region": [{**base, **overrides}]}


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"source": ""}, "'source' is missing"),
        ({"as_of": "last year"}, "as_of"),
        ({"probe_url": "nonsense"}, "probe_url"),
        ({"lat": 123.0}, "lat"),
        ({"lat": None, "lon": None}, "needs lat and lon"),
        ({"id": "Bad Id"}, "id must be"),
    ],
)
def test_malformed_entries_are_named(overrides, message):
    doc = _doc(**overrides)
    doc["region"][0] = {k: v for k, v in doc["region"][0].items() if v is not None}
    with pytest.raises(CatalogError, match=message) as exc:
        parse_catalog(doc)
    assert "region #1" in str(exc.value)


def test_duplicate_ids_are_refused():
    doc = _doc()
    doc["region"].append(dict(doc["region"][0]))
    with pytest.raises(CatalogError, match="more than once"):
        parse_catalog(doc)


def test_shipped_file_is_what_catalog_reads():
    assert len(load_asset("regions.toml")["region"]) == len(catalog())


def test_custom_rows_join_the_catalog_once():
    class Row:  # the attributes of planner.store.rtt.RttTargetRow that merge_custom reads
        def __init__(self, region_id, target):
            self.region_id, self.target, self.name, self.provider = region_id, target, "", "custom"
            self.city, self.lat, self.lon, self.anycast = "", None, None, False

    merged = merge_custom(catalog(), [Row("aws-us-east-1", "x:1"), Row("acme", "acme.dev:443")])
    assert len(merged) == len(catalog()) + 1
    assert merged[-1].id == "acme" and merged[-1].custom


def test_network_figure_is_rtt_times_round_trips_with_provenance():
    from planner.regions.catalog import ROUND_TRIPS, network_figure

    f = network_figure(
        region_label="AWS · Europe (Ireland)",
        vantage="Berlin office",
        side="browser",
        rtt_ms=24.0,
        n=10,
        measured_at_ms=1_796_000_000_000,
        round_trips=3,
        method="Resource Timing",
    )
    assert (f.value, f.unit, str(f.source), f.n) == (72.0, "ms", "rtt", 10)
    assert "AWS · Europe (Ireland) from Berlin office" in f.detail and "× 3 RTT" in f.detail
    assert set(ROUND_TRIPS) == {1, 3, 4}
    with pytest.raises(ValueError, match="round trips"):
        network_figure(region_label="x", vantage="v", side="server", rtt_ms=1, n=1, measured_at_ms=None, round_trips=2)
