"""What the comparison reads from the store: endpoints, raw samples, cold readings, RTT.

Raw samples are the source of truth; this module only selects
them for a set of endpoints, a vantage and a date range. Cold readings come
from the worker's cold_reading table, falling back to the latest kind='cold'
sample (each ColdReading says which); RTT comes from planner.store.rtt.
The SQL is planner.store.compare's; this module turns its rows into values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
from sqlalchemy.engine import Engine

from planner.endpoints.cold_readings import latest_cold_readings as newest_cold_readings
from planner.errors import PlannerError
from planner.probes.ttft import PHASES_MS
from planner.store import compare as store
from planner.store.rtt import rtt_summary

__all__ = [
    "ColdReading",
    "EndpointInfo",
    "RttFigure",
    "SAMPLE_COLUMNS",
    "UnknownEndpoint",
    "endpoint_names",
    "latest_cold_readings",
    "load_endpoints",
    "load_samples",
    "rtt_to_regions",
    "sample_span",
    "vantages",
]

SAMPLE_COLUMNS = (
    "endpoint",
    "vantage",
    "kind",
    "started_at_ms",
    "ok",
    "error_class",
    "attempts",
    "retry_wait_ms",
    *PHASES_MS,
    "total_ms",
    "cached_series",
)


class UnknownEndpoint(PlannerError, ValueError):
    """One or more endpoint names are not in the registry; the message lists them and the known names."""


@dataclass(frozen=True)
class EndpointInfo:
    """The registry fields a comparison shows (never the API key's env var name)."""

    id: int
    name: str
    provider: str
    region: str
    model: str
    interval_s: float
    scale_down_window_s: float | None


@dataclass(frozen=True)
class ColdReading:
    """The latest cold reading of one endpoint: time to first token when cold, and the warm probe after it.

    cold_ms / warm_ms in ms; measured_at_ms UTC epoch ms; source says which table it came from.
    """

    cold_ms: float
    warm_ms: float | None
    measured_at_ms: int
    source: str

    @property
    def segment_ms(self) -> float | None:
        """cold − warm: the weight-loading estimate (segment 2), None without a warm half."""
        return None if self.warm_ms is None else max(0.0, self.cold_ms - self.warm_ms)


@dataclass(frozen=True)
class RttFigure:
    """RTT from a vantage to a catalog region (ms), with its n and when it was last measured."""

    region: str
    vantage: str
    median_ms: float
    min_ms: float | None
    n: int
    measured_at_ms: int | None
    side: str = "server"


def endpoint_names(engine: Engine) -> list[str]:
    """Every registered endpoint's name, sorted."""
    return store.endpoint_names(engine)


def vantages(engine: Engine) -> list[str]:
    """Every vantage that has stored samples, sorted ("" is the unlabelled vantage)."""
    return store.sample_vantages(engine)


def load_endpoints(engine: Engine, names: Sequence[str]) -> list[EndpointInfo]:
    """The named endpoints, in the order given.

    Raises UnknownEndpoint naming every unknown name, and ValueError for an empty list.
    """
    names = [n.strip() for n in names if n and n.strip()]
    if not names:
        raise ValueError("name at least one endpoint to compare")
    rows = store.endpoints_named(engine, names)
    missing = [n for n in names if n not in rows]
    if missing:
        known = ", ".join(endpoint_names(engine)) or "none registered yet"
        raise UnknownEndpoint(f"unknown endpoint(s): {', '.join(missing)} (known: {known})")
    out, seen = [], set()
    for n in names:
        if n in seen:
            continue
        seen.add(n)
        r = rows[n]
        assert r.id is not None  # a row read from the database has its id
        out.append(EndpointInfo(r.id, r.name, r.provider, r.region, r.model, r.interval_s, r.scale_down_window_s))
    return out


def sample_span(engine: Engine, endpoints: Sequence[EndpointInfo]) -> tuple[int, int] | None:
    """(first, last) started_at_ms over the endpoints' samples (UTC epoch ms), None when there are none."""
    return store.sample_span(engine, [e.id for e in endpoints])


def load_samples(
    engine: Engine,
    endpoints: Sequence[EndpointInfo],
    *,
    since_ms: int | None = None,
    until_ms: int | None = None,
    vantage: str | None = None,
) -> pd.DataFrame:
    """Raw samples of `endpoints` with started_at_ms in [since_ms, until_ms) from `vantage` (None = all).

    Returns a frame with SAMPLE_COLUMNS (endpoint is the endpoint's name), oldest first.
    """
    by_id = {e.id: e.name for e in endpoints}
    cols = [c for c in SAMPLE_COLUMNS if c != "endpoint"]
    rows = store.sample_rows(engine, list(by_id), cols, since_ms=since_ms, until_ms=until_ms, vantage=vantage)
    df = pd.DataFrame(rows, columns=["endpoint_id", *cols])
    df.insert(0, "endpoint", df.pop("endpoint_id").map(by_id))
    for c in (*PHASES_MS, "total_ms", "retry_wait_ms"):
        df[c] = pd.to_numeric(df[c], errors="coerce").astype(float)
    df["ok"] = df["ok"].astype(bool)
    df["cached_series"] = df["cached_series"].astype(bool)
    return df[list(SAMPLE_COLUMNS)]


def latest_cold_readings(
    engine: Engine, endpoints: Sequence[EndpointInfo], *, vantage: str | None = None
) -> dict[str, ColdReading]:
    """The latest cold reading per endpoint name (endpoints without one are absent).

    The worker's cold readings by the one rule of the Probes page (planner.endpoints.cold_readings.LATEST_RULE: the
    newest whose cold and warm probes both answered); an endpoint without one falls back to its latest kind='cold'
    sample and the kind='warm' sample right after it.
    """
    ids = {e.id: e.name for e in endpoints}
    out: dict[str, ColdReading] = {}
    for endpoint_id, row in newest_cold_readings(engine, list(ids), vantage=vantage).items():
        out[ids[endpoint_id]] = ColdReading(
            float(row["cold_ttft_ms"]), float(row["warm_ttft_ms"]), int(row["completed_at_ms"]), "cold reading"
        )
    fallback: dict[str, ColdReading] = {}
    for endpoint_id, kind, started, ttft in store.cold_warm_samples(engine, list(ids), vantage=vantage):
        name = ids[endpoint_id]
        if kind == "cold" and ttft is not None:
            fallback[name] = ColdReading(float(ttft), None, int(started), "latest cold sample")
        elif kind == "warm" and name in fallback and fallback[name].warm_ms is None and ttft is not None:
            r = fallback[name]
            fallback[name] = ColdReading(r.cold_ms, float(ttft), r.measured_at_ms, r.source)
    return {**fallback, **out}


def rtt_to_regions(engine: Engine, regions: Sequence[str], *, vantage: str | None = None) -> dict[str, RttFigure]:
    """RTT median (ms) from `vantage` to each region, from planner.store.rtt.rtt_summary.

    The server side (TCP connect) is preferred over the browser side; with several
    vantages (vantage=None) the row with the most samples wins. Regions never
    measured are absent.
    """
    wanted = {r for r in regions if r}
    if not wanted:
        return {}
    df = rtt_summary(engine, vantage=vantage)
    if df.empty:
        return {}
    df = df[df["region_id"].isin(wanted) & df["median_ms"].notna() & (df["n"] > 0)]
    out: dict[str, RttFigure] = {}
    for region, grp in df.groupby("region_id"):
        grp = grp.assign(_server=(grp["side"] == "server")).sort_values(["_server", "n"], ascending=False)
        best = grp.iloc[0]
        at = best["last_measured_at_ms"]
        out[str(region)] = RttFigure(
            str(region),
            str(best["vantage"]),
            float(best["median_ms"]),
            None if pd.isna(best["min_ms"]) else float(best["min_ms"]),
            int(best["n"]),
            None if pd.isna(at) else int(at),
            str(best["side"]),
        )
    return out
