"""The provider catalog (assets/providers.toml): what `endpoints add --from` and the Endpoints page fill in.

A row says how to reach one provider: its protocol, a base URL template per region, the usual key variable,
model ids, the catalog regions (assets/regions.toml) it serves from, price rows (assets/prices.toml), whether
its front door is a global anycast edge or regional, what is known about scale-to-zero, and a source + as-of.
`endpoint_fields` turns a row, a model and a region into the fields of planner.endpoints.registry.add_endpoint;
`catalog_region` maps a stored endpoint back to its catalog region (for region-aware Compare).
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from planner.asset_files import first_repeat, load_asset
from planner.errors import CatalogError
from planner.inputs.env_names import env_name_problem
from planner.probes.protocols import PROTOCOLS

__all__ = [
    "FRONT_DOORS",
    "CatalogError",
    "ProviderEntry",
    "ProviderParam",
    "catalog",
    "catalog_region",
    "endpoint_fields",
    "find_provider",
    "parse_catalog",
    "parse_spec",
]

FRONT_DOORS = ("global", "regional", "self-hosted")
_REQUIRED = ("key", "provider", "protocol", "base_url", "source", "as_of", "front_door", "scale_to_zero")
_KEY_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,59}$")
_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


@dataclass(frozen=True)
class ProviderParam:
    """A base-URL template name other than {region}/{model}: read from `env`, else `default`."""

    name: str
    env: str = ""
    default: str = ""
    help: str = ""


@dataclass(frozen=True)
class ProviderEntry:
    """One catalog row (see assets/providers.toml's header for the fields)."""

    key: str
    provider: str
    protocol: str
    base_url: str
    key_env: str
    models: tuple[str, ...]
    default_region: str
    front_door: str
    scale_to_zero: str
    source: str
    as_of: str
    regions: Mapping[str, str] = field(default_factory=dict)  # provider region name → catalog region id
    prices: Mapping[str, str] = field(default_factory=dict)  # model id → assets/prices.toml [[serverless]] key
    params: tuple[ProviderParam, ...] = ()
    base_urls: Mapping[str, str] = field(default_factory=dict)  # region name → its own base URL template

    def base_url_for(self, region: str) -> str:
        """The base URL template for `region`: its own [provider.base_urls] row (Vertex's global endpoint has no
        region in its host name), else base_url."""
        return self.base_urls.get(region, self.base_url)

    @property
    def label(self) -> str:
        return f"{self.provider} ({self.key})"


def _row(i: int, e: Any, region_ids: set[str], price_keys: set[str]) -> ProviderEntry:
    where = f"assets/providers.toml provider #{i + 1}" + (
        f" ({e.get('key')!r})" if isinstance(e, Mapping) and e.get("key") else ""
    )
    if not isinstance(e, Mapping):
        raise CatalogError(f"{where}: expected a table, got {type(e).__name__}")
    for name in _REQUIRED:
        if not isinstance(e.get(name), str) or not e[name].strip():
            raise CatalogError(f"{where}: field {name!r} is missing or empty")
    if not _KEY_RE.match(e["key"]):
        raise CatalogError(f"{where}: key must be lowercase letters, digits, '.', '_' or '-' (≤ 60 chars)")
    try:
        dt.date.fromisoformat(e["as_of"])
    except ValueError:
        raise CatalogError(f"{where}: as_of must be a date YYYY-MM-DD, got {e['as_of']!r}") from None
    if e["protocol"] not in PROTOCOLS:
        raise CatalogError(f"{where}: protocol must be one of {', '.join(PROTOCOLS)}, got {e['protocol']!r}")
    if e["front_door"] not in FRONT_DOORS:
        raise CatalogError(f"{where}: front_door must be one of {', '.join(FRONT_DOORS)}, got {e['front_door']!r}")
    key_env = e.get("key_env", "")
    problem = env_name_problem(key_env, "key_env") if not isinstance(key_env, str) or key_env else None
    if problem:
        raise CatalogError(f"{where}: {problem}")
    models = e.get("models")
    if not isinstance(models, list) or not models or not all(isinstance(m, str) and m.strip() for m in models):
        raise CatalogError(f"{where}: models must be a non-empty list of model ids")
    regions = e.get("regions", {})
    if not isinstance(regions, Mapping) or not all(isinstance(v, str) for v in regions.values()):
        raise CatalogError(f"{where}: [provider.regions] must map region names to catalog region ids")
    if not regions and e["front_door"] != "self-hosted":
        raise CatalogError(f"{where}: [provider.regions] is empty (only self-hosted rows may have none)")
    for name, rid in regions.items():
        if rid not in region_ids:
            raise CatalogError(
                f"{where}: region {name!r} names catalog region {rid!r}, which assets/regions.toml does not have"
            )
    default_region = e.get("default_region", "")
    if regions and default_region not in regions:
        raise CatalogError(f"{where}: default_region {default_region!r} is not one of its regions")
    prices = e.get("prices", {})
    if not isinstance(prices, Mapping):
        raise CatalogError(f"{where}: [provider.prices] must map model ids to price keys")
    for model, pkey in prices.items():
        if model not in models:
            raise CatalogError(f"{where}: price row for {model!r}, which is not in its models")
        if pkey not in price_keys:
            raise CatalogError(
                f"{where}: price key {pkey!r} for {model!r} is not a [[serverless]] row of assets/prices.toml"
            )
    raw_params = e.get("params", {})
    if not isinstance(raw_params, Mapping):
        raise CatalogError(f"{where}: [provider.params] must be a table")
    params = []
    for name, spec in raw_params.items():
        if not isinstance(spec, Mapping) or not (spec.get("env") or spec.get("default")):
            raise CatalogError(f"{where}: param {name!r} needs an env variable or a default")
        params.append(
            ProviderParam(name, str(spec.get("env", "")), str(spec.get("default", "")), str(spec.get("help", "")))
        )
    base_urls = e.get("base_urls", {})
    if not isinstance(base_urls, Mapping) or not all(isinstance(v, str) and v.strip() for v in base_urls.values()):
        raise CatalogError(f"{where}: [provider.base_urls] must map region names to base URL templates")
    for name in base_urls:
        if name not in regions:
            raise CatalogError(f"{where}: [provider.base_urls] names region {name!r}, which is not one of its regions")
    for label, template in [("base_url", e["base_url"])] + [(f"base_urls.{k}", v) for k, v in base_urls.items()]:
        unknown = set(_PLACEHOLDER.findall(template)) - {"region", "model"} - {p.name for p in params}
        if unknown:
            raise CatalogError(f"{where}: {label} uses {{{min(unknown)}}}, which no [provider.params] defines")
    return ProviderEntry(
        key=e["key"],
        provider=e["provider"],
        protocol=e["protocol"],
        base_url=e["base_url"],
        key_env=key_env,
        models=tuple(models),
        default_region=default_region,
        front_door=e["front_door"],
        scale_to_zero=e["scale_to_zero"],
        source=e["source"],
        as_of=e["as_of"],
        regions=dict(regions),
        prices=dict(prices),
        params=tuple(params),
        base_urls=dict(base_urls),
    )


def parse_catalog(
    data: Mapping[str, Any], region_ids: Iterable[str], price_keys: Iterable[str]
) -> tuple[ProviderEntry, ...]:
    """Validate a parsed providers TOML document ({"provider": [...]}) against the region ids and price keys
    that exist; raises CatalogError naming the row and field (missing source/as-of, an unknown region or price
    reference, an unknown protocol, a template name nothing defines, a duplicate key)."""
    rows = data.get("provider")
    if not isinstance(rows, list) or not rows:
        raise CatalogError("assets/providers.toml needs a non-empty [[provider]] list")
    rids, pkeys = set(region_ids), set(price_keys)
    out = tuple(_row(i, e, rids, pkeys) for i, e in enumerate(rows))
    repeated = first_repeat(p.key for p in out)
    if repeated is not None:
        raise CatalogError(f"assets/providers.toml: provider key {repeated!r} appears more than once")
    return out


@cache
def catalog() -> tuple[ProviderEntry, ...]:
    """The built-in provider catalog, validated against assets/regions.toml and assets/prices.toml."""
    from planner.capacity.specs import serverless_prices
    from planner.regions.catalog import catalog as region_catalog

    return parse_catalog(
        load_asset("providers.toml"), (r.id for r in region_catalog()), (p.key for p in serverless_prices())
    )


def find_provider(key: str, entries: Iterable[ProviderEntry] | None = None) -> ProviderEntry:
    """The row with this key; raises CatalogError listing the keys there are."""
    pool = list(catalog() if entries is None else entries)
    for p in pool:
        if p.key == key:
            return p
    raise CatalogError(f"no provider {key!r} in the catalog; known: {', '.join(p.key for p in pool)}")


def parse_spec(spec: str) -> tuple[str, str, str | None]:
    """(provider key, model, region or None) from "PROVIDER:MODEL[@REGION]"; the model may contain ':'
    (Bedrock ids do) and the region is after the last '@'. Raises CatalogError for a malformed spec."""
    key, sep, rest = spec.strip().partition(":")
    if not sep or not key or not rest:
        raise CatalogError(
            f"--from {spec!r}: expected PROVIDER:MODEL[@REGION], e.g. bedrock:amazon.nova-lite-v1:0@eu-central-1"
        )
    model, at, region = rest.rpartition("@") if "@" in rest else (rest, "", "")
    if at and not region:
        raise CatalogError(f"--from {spec!r}: nothing after '@' (give a region or leave '@' out)")
    if not model:
        raise CatalogError(f"--from {spec!r}: the model id is empty")
    return key, model, region or None


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-")


def endpoint_fields(
    entry: ProviderEntry,
    model: str,
    region: str | None = None,
    params: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Fields for planner.endpoints.registry.add_endpoint: name, provider, region, protocol, base_url, model,
    api_key_env.

    `region` is the provider's region name (default_region when None); template names come from `params`, else
    the param's env variable (in `env`, default os.environ), else its default. Raises CatalogError naming a
    region the row does not serve or a template name with no value."""
    env = os.environ if env is None else env
    region = entry.default_region if region is None else region
    if entry.regions and region not in entry.regions:
        raise CatalogError(f"{entry.key} does not serve region {region!r}; its regions: {', '.join(entry.regions)}")
    values = {"region": region, "model": model}
    for p in entry.params:
        value = (params or {}).get(p.name) or (env.get(p.env) if p.env else "") or p.default
        if not value:
            hint = f" or set {p.env}" if p.env else ""
            raise CatalogError(
                f"{entry.key} needs {{{p.name}}} ({p.help or 'a template value'}): pass --param {p.name}=VALUE{hint}"
            )
        values[p.name] = value
    unknown = set(params or {}) - {p.name for p in entry.params}
    if unknown:
        raise CatalogError(
            f"{entry.key} has no parameter {min(unknown)!r}; its parameters: "
            f"{', '.join(p.name for p in entry.params) or 'none'}"
        )
    base_url = _PLACEHOLDER.sub(lambda m: values[m.group(1)], entry.base_url_for(region))
    name = "-".join(s for s in (entry.key, _slug(model.rsplit("/", 1)[-1]), _slug(region or "")) if s)[:120]
    return {
        "name": name,
        "provider": entry.provider,
        "region": region or "",
        "protocol": entry.protocol,
        "base_url": base_url,
        "model": model,
        "api_key_env": entry.key_env,
    }


def catalog_region(provider: str, region: str, entries: Iterable[ProviderEntry] | None = None) -> str | None:
    """The catalog region id an endpoint (provider label, region name) serves from, or None when unknown.

    A region that is itself a catalog region id of that provider's rows is accepted as is."""
    for p in catalog() if entries is None else entries:
        if p.provider != provider and p.key != provider:
            continue
        if region in p.regions:
            return p.regions[region]
        if region in p.regions.values():
            return region
        if not region and p.default_region in p.regions and p.front_door == "global":
            return p.regions[p.default_region]
    return None
