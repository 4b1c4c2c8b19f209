"""Region-aware comparison: which catalog region each endpoint serves from, and the RTT to it from the vantage.

An endpoint added from the provider catalog stores its provider's label and region name ("AWS Bedrock",
"eu-central-1"); planner.endpoints.providers.catalog_region maps that to a catalog region of assets/regions.toml
("bedrock-eu-central-1"), whose RTT the worker measures. An endpoint typed by hand whose region is already a
catalog region id keeps it. So "Bedrock eu-central-1 vs Azure westeurope vs a US serverless cloud" reads as one
table, each row with the network share of its TTFT from the chosen vantage.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

import pandas as pd

from planner.compare.data import EndpointInfo, RttFigure
from planner.endpoints.providers import catalog_region
from planner.regions.catalog import catalog as region_catalog
from planner.settings import vantage_name

__all__ = ["ServingRegion", "region_table", "serving_regions"]


@dataclass(frozen=True)
class ServingRegion:
    """The catalog region an endpoint serves from ('' when unknown), its label, and whether its front door is
    an anycast edge (then the RTT is to the nearest edge, not to the serving region)."""

    region_id: str
    label: str
    anycast: bool


def serving_regions(endpoints: Iterable[EndpointInfo], measured: Collection[str] = ()) -> dict[str, ServingRegion]:
    """Endpoint name → its ServingRegion (region_id '' when neither the provider catalog, the region catalog nor the
    RTT targets the team measures (`measured`: region ids with RTT samples) know its region)."""
    regions = {r.id: r for r in region_catalog()}
    out = {}
    for e in endpoints:
        known = e.region in regions or e.region in measured
        rid = catalog_region(e.provider, e.region) or (e.region if known else "")
        r = regions.get(rid)
        out[e.name] = ServingRegion(rid, r.label if r else "", bool(r and r.anycast))
    return out


def region_table(
    endpoints: Iterable[EndpointInfo],
    serving: Mapping[str, ServingRegion],
    rtt: Mapping[str, RttFigure | None],
    vantage: str | None,
) -> pd.DataFrame:
    """One row per endpoint: provider, its region, the catalog region it serves from, front door, and the RTT
    median (ms) from `vantage` to that region with its n — or why there is none."""
    rows = []
    for e in endpoints:
        s = serving.get(e.name) or ServingRegion("", "", False)
        fig = rtt.get(e.name)
        if not s.region_id:
            why = "region unknown: add it from the provider catalog or set a catalog region id"
        elif fig is None:
            why = (
                f"not measured from {'any vantage' if vantage is None else repr(vantage or 'default')}: "
                f"enable {s.region_id} on the Regions page"
            )
        else:
            why = ""
        rows.append(
            {
                "Endpoint": e.name,
                "Provider": e.provider or "—",
                "Region": e.region or "—",
                "Serves from (catalog region)": s.label or s.region_id or "—",
                "Front door": "anycast edge" if s.anycast else ("regional" if s.region_id else "—"),
                "RTT median (ms)": None if fig is None else round(fig.median_ms, 1),
                "RTT n": None if fig is None else fig.n,
                "Measured from": "—" if fig is None else vantage_name(fig.vantage) + f" ({fig.side})",
                "Note": why,
            }
        )
    return pd.DataFrame(rows)
