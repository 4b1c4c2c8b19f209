"""Region-aware Compare: each endpoint's serving region from the provider catalog, and the RTT from the chosen
vantage to it, on a real temp SQLite store ("Bedrock eu-central-1 vs Azure westeurope vs a US serverless cloud")."""

from __future__ import annotations

import time

from planner.compare import compare
from planner.compare.regions import region_table
from planner.endpoints.providers import endpoint_fields, find_provider
from planner.endpoints.registry import add_endpoint
from planner.probes.rtt_record import SampleRecord
from planner.store.rtt import insert_rtt_samples

NOW_MS = int(time.time() * 1000)


def _rtt(engine, region_id: str, vantage: str, values_ms: list[float]) -> None:
    insert_rtt_samples(
        engine,
        [
            SampleRecord(region_id, "host:443", "server", "tcp-connect", v, NOW_MS - i * 1000, vantage)
            for i, v in enumerate(values_ms)
        ],
    )


def test_each_endpoint_gets_the_rtt_to_its_catalog_region_from_the_chosen_vantage(engine):
    for key, model, region, params in [
        ("bedrock", "amazon.nova-lite-v1:0", "eu-central-1", {}),
        ("azure-openai", "gpt-4o-mini", "westeurope", {"resource": "acme"}),
        ("together", "meta-llama/Llama-3.3-70B-Instruct-Turbo", None, {}),
    ]:
        add_endpoint(engine, endpoint_fields(find_provider(key), model, region, params))
    add_endpoint(engine, {"name": "typed-by-hand", "base_url": "https://x.example/v1", "model": "m", "region": "mars"})
    _rtt(engine, "bedrock-eu-central-1", "berlin", [11.0, 12.0, 13.0])
    _rtt(engine, "bedrock-eu-central-1", "virginia", [91.0, 92.0, 93.0])
    _rtt(engine, "azure-westeurope", "berlin", [17.0, 19.0, 18.0])
    _rtt(engine, "together-api", "berlin", [4.0, 5.0, 6.0])
    names = [
        "bedrock-amazon.nova-lite-v1-0-eu-central-1",
        "azure-openai-gpt-4o-mini-westeurope",
        "together-llama-3.3-70b-instruct-turbo-global",
        "typed-by-hand",
    ]
    cmp = compare(engine, names, vantage="berlin")
    table = region_table(cmp.endpoints, cmp.serving, {m.name: m.rtt for m in cmp.metrics}, cmp.vantage)
    rows = table.set_index("Endpoint")
    assert list(rows["RTT median (ms)"].iloc[:3]) == [12.0, 18.0, 5.0]  # Berlin's figures, not Virginia's
    assert rows.loc[names[0], "Serves from (catalog region)"].endswith("Europe (Frankfurt)")
    assert rows.loc[names[0], "Front door"] == "regional"
    assert rows.loc[names[2], "Front door"] == "anycast edge"
    assert rows.loc[names[3], "Note"].startswith("region unknown")
    m = {x.name: x for x in cmp.metrics}
    assert m[names[1]].rtt.region == "azure-westeurope" and m[names[1]].rtt.median_ms == 18.0
    cmp = compare(engine, names[:1], vantage="virginia")
    assert cmp.metrics[0].rtt.median_ms == 92.0
    cmp = compare(engine, names[1:2], vantage="tokyo")
    table = region_table(cmp.endpoints, cmp.serving, {m.name: m.rtt for m in cmp.metrics}, cmp.vantage)
    assert table["Note"].iloc[0] == "not measured from 'tokyo': enable azure-westeurope on the Regions page"
