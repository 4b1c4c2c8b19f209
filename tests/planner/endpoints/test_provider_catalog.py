"""The provider catalog (assets/providers.toml): every row sourced and dated, every region and price reference real,
and `ttft-planner endpoints add --from PROVIDER:MODEL[@REGION]` filling every field of a real temp-SQLite endpoint."""

from __future__ import annotations

import json
import tomllib

import pytest
from click.testing import CliRunner

from planner.asset_files import ASSETS_DIR
from planner.capacity.specs import serverless_prices
from planner.cli import cli
from planner.endpoints.providers import (
    CatalogError,
    catalog,
    catalog_region,
    endpoint_fields,
    find_provider,
    parse_catalog,
    parse_spec,
)
from planner.regions.catalog import catalog as region_catalog

REQUIRED = {
    "openai",
    "anthropic",
    "google-ai-studio",
    "vertex",
    "bedrock",
    "azure-openai",
    "mistral",
    "groq",
    "together",
    "fireworks",
    "deepinfra",
    "cerebras",
    "vllm",
    "sglang",
    "llama-cpp",
}


def _raw() -> dict:
    return tomllib.loads((ASSETS_DIR / "providers.toml").read_text())


def test_catalog_covers_the_providers_buyers_compare_and_every_row_has_source_and_as_of():
    rows = catalog()
    assert REQUIRED <= {p.key for p in rows}
    for p in rows:
        assert p.source.strip() and p.as_of[:4].isdigit(), p.key
        assert p.key_env == "" or p.key_env.isupper(), p.key  # a variable NAME, never a value


def test_every_region_and_price_reference_exists():
    region_ids = {r.id for r in region_catalog()}
    price_keys = {p.key for p in serverless_prices()}
    for p in catalog():
        assert set(p.regions.values()) <= region_ids, p.key
        assert set(p.prices.values()) <= price_keys, p.key
        assert p.front_door == "self-hosted" or p.regions, p.key
    assert len(find_provider("bedrock").regions) >= 10 and len(find_provider("vertex").regions) >= 10


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda r: r.pop("source"), ["provider #1", "'source'"]),
        (lambda r: r.update(as_of="last year"), ["as_of must be a date"]),
        (lambda r: r["regions"].update(mars="aws-mars-1"), ["'aws-mars-1'", "assets/regions.toml"]),
        (lambda r: r.update(prices={"gpt-4.1-mini": "no-such-price"}), ["'no-such-price'", "assets/prices.toml"]),
        (lambda r: r.update(base_url="https://{tenant}.example.com"), ["{tenant}"]),
        (lambda r: r.update(protocol="grpc"), ["protocol must be one of"]),
        (lambda r: r.update(base_urls={"mars": "https://mars.example"}), ["base_urls", "'mars'"]),
        (lambda r: r.update(base_urls={"global": "https://{tenant}.example"}), ["base_urls.global", "{tenant}"]),
    ],
    ids=[
        "no-source",
        "bad-as-of",
        "unknown-region",
        "unknown-price",
        "unknown-template-name",
        "unknown-protocol",
        "base-url-for-a-region-it-lacks",
        "base-url-with-unknown-name",
    ],
)
def test_a_bad_row_is_refused_naming_the_row_and_field(edit, words):
    data = _raw()
    edit(data["provider"][0])
    with pytest.raises(CatalogError) as err:
        parse_catalog(data, (r.id for r in region_catalog()), (p.key for p in serverless_prices()))
    assert "assets/providers.toml" in str(err.value) and all(w in str(err.value) for w in words), str(err.value)


def test_a_repeated_provider_key_is_refused_naming_it():
    data = _raw()
    data["provider"].append(dict(data["provider"][0]))
    with pytest.raises(CatalogError) as err:
        parse_catalog(data, (r.id for r in region_catalog()), (p.key for p in serverless_prices()))
    key = data["provider"][0]["key"]
    assert str(err.value) == f"assets/providers.toml: provider key {key!r} appears more than once"


def test_spec_keeps_colons_in_bedrock_model_ids_and_fields_fill_the_region_template():
    assert parse_spec("bedrock:anthropic.claude-3-5-haiku-20241022-v1:0@eu-central-1") == (
        "bedrock",
        "anthropic.claude-3-5-haiku-20241022-v1:0",
        "eu-central-1",
    )
    assert parse_spec("openai:gpt-4o-mini") == ("openai", "gpt-4o-mini", None)
    f = endpoint_fields(find_provider("vertex"), "gemini-2.5-flash", "europe-west4", env={"GOOGLE_CLOUD_PROJECT": "p9"})
    assert f["base_url"] == (
        "https://europe-west4-aiplatform.googleapis.com/v1/projects/p9/locations/europe-west4/publishers/google"
    )
    assert catalog_region(f["provider"], f["region"]) == "gcp-europe-west4"
    with pytest.raises(CatalogError, match="--param project=VALUE or set GOOGLE_CLOUD_PROJECT"):
        endpoint_fields(find_provider("vertex"), "gemini-2.5-flash", "europe-west4", env={})


def test_cli_add_from_catalog_fills_every_field(sqlite_store_url):
    r = CliRunner()
    db = ["--database-url", sqlite_store_url]
    res = r.invoke(cli, ["endpoints", "add", "--from", "bedrock:amazon.nova-lite-v1:0@eu-central-1", *db])
    assert res.exit_code == 0, res.output
    res = r.invoke(
        cli,
        [
            "endpoints",
            "add",
            "--from",
            "azure-openai:gpt-4o-mini@westeurope",
            "--param",
            "resource=acme-we",
            "--interval-s",
            "120",
            *db,
        ],
    )
    assert res.exit_code == 0, res.output
    listed = r.invoke(cli, ["endpoints", "list", "--json", *db]).output
    rows = {d["name"]: d for d in map(json.loads, listed.splitlines())}
    bedrock = rows["bedrock-amazon.nova-lite-v1-0-eu-central-1"]
    assert bedrock | {"key": None} == bedrock | {
        "provider": "AWS Bedrock",
        "region": "eu-central-1",
        "protocol": "bedrock",
        "model": "amazon.nova-lite-v1:0",
        "base_url": "https://bedrock-runtime.eu-central-1.amazonaws.com",
        "api_key_env": "",
        "key": None,
    }
    assert bedrock["key"] == "AWS credential chain"
    azure = rows["azure-openai-gpt-4o-mini-westeurope"]
    assert azure["base_url"] == "https://acme-we.openai.azure.com/openai/deployments/gpt-4o-mini?api-version=2024-10-21"
    assert (azure["api_key_env"], azure["interval_s"]) == ("AZURE_OPENAI_API_KEY", 120.0)
    assert azure["protocol"] == "azure-openai"


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("nosuch:m", ["no provider 'nosuch'", "bedrock"]),
        ("bedrock:amazon.nova-lite-v1:0@mars-1", ["does not serve region 'mars-1'", "eu-central-1"]),
        ("bedrock", ["expected PROVIDER:MODEL[@REGION]"]),
        ("vertex:gemini-2.5-flash@us-central1", ["--param project=VALUE"]),
    ],
)
def test_cli_add_from_a_bad_spec_is_one_line_naming_it(sqlite_store_url, monkeypatch, spec, words):
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT", raising=False)
    res = CliRunner().invoke(cli, ["endpoints", "add", "--from", spec, "--database-url", sqlite_store_url])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "--from" in res.output and all(w in res.output for w in words), res.output


def test_cli_catalog_shows_key_variables_present_or_missing_never_values(monkeypatch):
    monkeypatch.setenv("GROQ_API_KEY", "gsk_secret_value_123")
    monkeypatch.delenv("CEREBRAS_API_KEY", raising=False)
    out = CliRunner().invoke(cli, ["endpoints", "catalog", "--json"]).output
    rows = {d["key"]: d for d in map(json.loads, out.splitlines())}
    assert rows["groq"]["key_status"] == "key set" and rows["cerebras"]["key_status"] == "key missing"
    assert "gsk_secret_value_123" not in out


def test_vertex_global_and_azure_swedencentral_are_listed_with_their_own_hosts(sqlite_store_url):
    """Issue 28: Vertex AI's global endpoint (aiplatform.googleapis.com: no region in the host) and Azure's Sweden
    Central are in the catalog, each with a catalog region for RTT, and `endpoints add --from` fills them."""
    vertex, azure = find_provider("vertex"), find_provider("azure-openai")
    assert vertex.regions["global"] == "gcp-global" and azure.regions["swedencentral"] == "azure-swedencentral"
    regions = {r.id: r for r in region_catalog()}
    assert regions["gcp-global"].probe_url == "https://aiplatform.googleapis.com/" and regions["gcp-global"].anycast
    sweden = regions["azure-swedencentral"]
    assert sweden.probe_url.endswith(".blob.core.windows.net/public/latency-test.json") and not sweden.anycast
    assert 55 < sweden.lat < 70 and 10 < sweden.lon < 25  # in Sweden
    f = endpoint_fields(vertex, "gemini-2.5-flash", "global", env={"GOOGLE_CLOUD_PROJECT": "p9"})
    assert f["base_url"] == "https://aiplatform.googleapis.com/v1/projects/p9/locations/global/publishers/google"
    assert catalog_region(f["provider"], f["region"]) == "gcp-global"
    db = ["--database-url", sqlite_store_url]
    r = CliRunner()
    res = r.invoke(
        cli, ["endpoints", "add", "--from", "azure-openai:gpt-4o@swedencentral", "--param", "resource=se"] + db
    )
    assert res.exit_code == 0, res.output
    res = r.invoke(cli, ["endpoints", "add", "--from", "vertex:gemini-2.5-pro@global", "--param", "project=p9"] + db)
    assert res.exit_code == 0, res.output
    rows = {
        d["name"]: d for d in map(json.loads, r.invoke(cli, ["endpoints", "list", "--json", *db]).output.splitlines())
    }
    assert rows["azure-openai-gpt-4o-swedencentral"]["region"] == "swedencentral"
    assert rows["azure-openai-gpt-4o-swedencentral"]["base_url"].startswith("https://se.openai.azure.com/")
    assert rows["vertex-gemini-2.5-pro-global"]["base_url"] == (
        "https://aiplatform.googleapis.com/v1/projects/p9/locations/global/publishers/google"
    )
    listed = r.invoke(cli, ["endpoints", "catalog", "--json"]).output
    cat = {d["key"]: d for d in map(json.loads, listed.splitlines())}
    assert "global" in json.dumps(cat["vertex"]) and "swedencentral" in json.dumps(cat["azure-openai"])
