"""The region catalog (assets/regions.toml) and custom RTT targets.

A region is a place an LLM could be served from, with a probe URL suited to RTT
measurement: a light per-region endpoint (a cloud's regional /ping or a tiny
blob) whose TCP handshake terminates in that region. Anycast / global front
doors (api.openai.com, api.anthropic.com, Google's front ends) are flagged:
a connect to them measures the nearest edge, not the region that serves the model.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from typing import Any
from urllib.parse import urlsplit

from planner.asset_files import first_repeat, load_asset
from planner.errors import CatalogError
from planner.inputs.urls import UrlError, check_url
from planner.worksheet.provenance import Figure, Source

__all__ = [
    "CatalogError",
    "RTT_INTERVAL_BOUNDS_S",
    "RttAddress",
    "RttMethod",
    "ROUND_TRIPS",
    "Region",
    "catalog",
    "check_rtt_interval_s",
    "find_region",
    "merge_custom",
    "network_figure",
    "parse_catalog",
    "parse_target",
]

_ID_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,119}$")
_HOSTNAME_RE = re.compile(
    r"^(?=.{1,253}$)([A-Za-z0-9_]([A-Za-z0-9-_]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9_]([A-Za-z0-9-_]{0,61}[A-Za-z0-9])?)*\.?$"
)


class RttMethod(StrEnum):
    """How one RTT sample was measured (the stored value is the member's value: rtt_sample.method, and what the
    browser component sends). dns, tls and https-ttfb ride along with a server run; only tcp-connect (server) and
    resource-timing, else the labelled fetch-performance-now fallback (browser), are "the RTT"."""

    DNS = "dns"  # the one timed resolution, never network time
    TCP_CONNECT = "tcp-connect"  # SYN → SYN/ACK: exactly one round trip
    TLS = "tls"  # the TLS handshake
    HTTPS_TTFB = "https-ttfb"  # one HTTPS request's time to first byte
    RESOURCE_TIMING = "resource-timing"  # browser: responseStart − requestStart
    FETCH_PERFORMANCE_NOW = "fetch-performance-now"  # browser fallback: performance.now() around fetch


#: (lowest, highest) seconds between scheduled RTT probes of one target.
RTT_INTERVAL_BOUNDS_S = (10.0, 7 * 86400.0)


def check_rtt_interval_s(region_id: str, interval_s: object) -> float:
    """`interval_s` as a float when finite and inside RTT_INTERVAL_BOUNDS_S; raises ValueError naming the target.

    An infinite interval used to reach the worker and stop its housekeeping (issue 15 item 2)."""
    lo, hi = RTT_INTERVAL_BOUNDS_S
    try:
        value = float(interval_s)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"interval for {region_id!r} must be a number of seconds, got {interval_s!r}") from None
    if value < lo:
        raise ValueError(f"interval for {region_id!r} must be at least {lo:g} s, got {value:g}")
    if not value <= hi:  # NaN fails the comparison too
        raise ValueError(
            f"interval for {region_id!r} must be a finite number of seconds, at most {hi:g}, got {value:g}"
        )
    return value


@dataclass(frozen=True)
class RttAddress:
    """Where an RTT probe goes: host and port for TCP, plus scheme/path for the HTTPS TTFB request.

    `scheme` is "https", "http" or "tcp" (a bare host:port: TCP connects only).
    """

    scheme: str
    host: str
    port: int
    path: str = "/"

    @property
    def is_tls(self) -> bool:
        return self.scheme == "https"

    @property
    def url(self) -> str | None:
        """The URL a browser can fetch, or None for a TCP-only target."""
        if self.scheme == "tcp":
            return None
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        port = "" if self.port == default else f":{self.port}"
        return f"{self.scheme}://{host}{port}{self.path}"

    def __str__(self) -> str:
        return self.url or (f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}")


def _valid_host(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return bool(_HOSTNAME_RE.match(host))


def parse_target(text: str) -> RttAddress:
    """Parse a URL (https://host[:port]/path, http://…) or host:port ([v6]:port for IPv6).

    Raises CatalogError with a message naming what is wrong, e.g. a missing port or an
    unsupported scheme.
    """
    raw = (text or "").strip()
    if not raw:
        raise CatalogError("an RTT target needs a URL (https://host/path) or host:port")
    if "://" in raw:
        try:
            check_url(raw, what="RTT target")
        except UrlError as exc:
            raise CatalogError(str(exc)) from None
        parts = urlsplit(raw)
        port = parts.port
        host = parts.hostname or ""
        if not host or not _valid_host(host):
            raise CatalogError(f"RTT target {raw!r}: {host or '(empty)'!r} is not a host name or IP address")
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        return RttAddress(parts.scheme, host, port or (443 if parts.scheme == "https" else 80), path)
    m = re.match(r"^\[([0-9A-Fa-f:.]+)\]:(\d+)$", raw) or re.match(r"^([^:\s/]+):(\d+)$", raw)
    if not m:
        raise CatalogError(f"RTT target {raw!r}: give a URL (https://host/path) or host:port, e.g. api.example.com:443")
    host, port = m.group(1), int(m.group(2))
    if not 1 <= port <= 65535:
        raise CatalogError(f"RTT target {raw!r}: port must be 1–65535, got {port}")
    if not _valid_host(host):
        raise CatalogError(f"RTT target {raw!r}: {host!r} is not a host name or IP address")
    return RttAddress("tcp", host, port)


@dataclass(frozen=True)
class Region:
    """A catalog region or a custom target. lat/lon in degrees (None when unknown, e.g. anycast)."""

    id: str
    provider: str
    name: str
    probe_url: str
    city: str = ""
    lat: float | None = None
    lon: float | None = None
    anycast: bool = False
    source: str = ""
    as_of: str = ""
    note: str = ""
    custom: bool = False

    @property
    def target(self) -> RttAddress:
        return parse_target(self.probe_url)

    @property
    def label(self) -> str:
        """'AWS · US East (N. Virginia)' style label; anycast targets say so."""
        text = f"{self.provider} · {self.name}"
        return f"{text} (anycast edge)" if self.anycast else text


_REQUIRED = ("id", "provider", "name", "probe_url", "source", "as_of")


def _entry(i: int, e: Mapping[str, Any]) -> Region:
    where = f"region #{i + 1}" + (f" ({e.get('id')!r})" if isinstance(e, Mapping) and e.get("id") else "")
    if not isinstance(e, Mapping):
        raise CatalogError(f"{where}: expected a table, got {type(e).__name__}")
    for key in _REQUIRED:
        if not isinstance(e.get(key), str) or not str(e.get(key)).strip():
            raise CatalogError(f"{where}: field {key!r} is missing or empty")
    if not _ID_RE.match(e["id"]):
        raise CatalogError(f"{where}: id must be lowercase letters, digits, '.', '_' or '-' (≤ 120 chars)")
    try:
        dt.date.fromisoformat(str(e["as_of"]))
    except ValueError:
        raise CatalogError(f"{where}: as_of must be a date YYYY-MM-DD, got {e['as_of']!r}") from None
    try:
        parse_target(e["probe_url"])
    except CatalogError as exc:
        raise CatalogError(f"{where}: probe_url: {exc}") from None
    anycast = e.get("anycast", False)
    if not isinstance(anycast, bool):
        raise CatalogError(f"{where}: anycast must be true or false")
    lat, lon = e.get("lat"), e.get("lon")
    if (lat is None) != (lon is None):
        raise CatalogError(f"{where}: give both lat and lon, or neither")
    if lat is None and not anycast:
        raise CatalogError(f"{where}: a regional endpoint needs lat and lon (only anycast entries may omit them)")
    if lat is not None:
        if not isinstance(lat, (int, float)) or not -90 <= lat <= 90:
            raise CatalogError(f"{where}: lat must be a number in −90..90, got {lat!r}")
        if not isinstance(lon, (int, float)) or not -180 <= lon <= 180:
            raise CatalogError(f"{where}: lon must be a number in −180..180, got {lon!r}")
    return Region(
        id=e["id"],
        provider=e["provider"],
        name=e["name"],
        probe_url=e["probe_url"],
        city=str(e.get("city", "")),
        lat=None if lat is None else float(lat),
        lon=None if lon is None else float(lon),
        anycast=anycast,
        source=e["source"],
        as_of=str(e["as_of"]),
        note=str(e.get("note", "")),
    )


def parse_catalog(data: Mapping[str, Any]) -> tuple[Region, ...]:
    """Validate a parsed regions TOML document ({"region": [...]}) and return its regions.

    Raises CatalogError naming the entry and field for a missing source/as_of, a bad
    probe URL, out-of-range coordinates or a duplicate id.
    """
    entries = data.get("region")
    if not isinstance(entries, list) or not entries:
        raise CatalogError("the region catalog needs a non-empty [[region]] list")
    regions = tuple(_entry(i, e) for i, e in enumerate(entries))
    repeated = first_repeat(r.id for r in regions)
    if repeated is not None:
        raise CatalogError(f"region id {repeated!r} appears more than once in the catalog")
    return regions


@cache
def catalog() -> tuple[Region, ...]:
    """The built-in regions from assets/regions.toml (validated; raises CatalogError)."""
    return parse_catalog(load_asset("regions.toml"))


def find_region(region_id: str, regions: Iterable[Region] | None = None) -> Region:
    """The region with this id (catalog by default); raises KeyError listing a few close ids."""
    pool = list(catalog() if regions is None else regions)
    for r in pool:
        if r.id == region_id:
            return r
    close = [r.id for r in pool if region_id and (region_id in r.id or r.id in region_id)][:5]
    hint = f"; did you mean {', '.join(close)}?" if close else "; see `ttft-planner regions list`"
    raise KeyError(f"no region with id {region_id!r}{hint}")


def merge_custom(regions: Iterable[Region], rows: Iterable[Any]) -> tuple[Region, ...]:
    """Catalog regions plus stored custom targets (rows with region_id, name, provider, target, …).

    A stored row whose region_id is a catalog id (the user scheduled that region) does not add a
    second entry; rows with unknown ids become custom regions.
    """
    out = list(regions)
    known = {r.id for r in out}
    for row in rows:
        if row.region_id in known:
            continue
        out.append(
            Region(
                id=row.region_id,
                provider=row.provider or "custom",
                name=row.name or row.region_id,
                probe_url=row.target,
                city=row.city or "",
                lat=row.lat,
                lon=row.lon,
                anycast=bool(row.anycast),
                source="added by a user",
                as_of="",
                custom=True,
            )
        )
        known.add(row.region_id)
    return tuple(out)


#: How many network round trips a request pays before its first token can arrive, by connection state.
ROUND_TRIPS: dict[int, str] = {
    1: "warm keep-alive connection: the request and the first token's bytes cross the path once (1 RTT)",
    3: "fresh connection, TLS 1.3: TCP handshake (1) + TLS handshake (1) + request (1) = 3 RTT",
    4: "fresh connection, TLS 1.2: TCP handshake (1) + TLS handshake (2) + request (1) = 4 RTT",
}


def network_figure(
    *,
    region_label: str,
    vantage: str,
    side: str,
    rtt_ms: float,
    n: int,
    measured_at_ms: int | None,
    round_trips: int = 1,
    method: str = "",
) -> Figure:
    """The worksheet's network segment (ms) for a region: RTT × round trips, with provenance.

    rtt_ms: the region's median RTT from `vantage`; round_trips: 1, 3 or 4 (see ROUND_TRIPS).
    Raises ValueError for another round-trip count or a negative RTT.
    """
    if round_trips not in ROUND_TRIPS:
        raise ValueError(f"round trips must be one of {sorted(ROUND_TRIPS)}, got {round_trips}")
    if not rtt_ms >= 0:
        raise ValueError(f"RTT must be ≥ 0 ms, got {rtt_ms}")
    how = f"{side} {method}".strip()
    detail = f"{region_label} from {vantage or 'unlabelled vantage'} ({how}, median × {round_trips} RTT)"
    return Figure(
        value=round(rtt_ms * round_trips, 1),
        unit="ms",
        source=Source.RTT,
        detail=detail,
        n=n,
        measured_at_ms=measured_at_ms,
    )
