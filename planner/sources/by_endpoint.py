"""Your users' TTFT at a registered endpoint: the production requests a live source read that went to it.

A request maps to an endpoint when both of these hold:

- its stored API base is the endpoint's base URL, once both are normalised (`normalise_base_url`): scheme and host
  lower-case, a default port (80 for http, 443 for https) dropped, user info, query and fragment dropped, and at the
  end of the path a trailing slash, an API route the client appended (`/chat/completions`, `/completions`,
  `/messages`, `/responses`) and then a trailing `/v1` dropped; so `https://API.openai.com:443/v1/` matches
  `https://api.openai.com`, and an Azure deployment's full URL matches the deployment's base. The path is otherwise
  kept as it is (paths are case-sensitive). A stored API base that is not an http(s) URL — an OpenTelemetry span
  that names no server (`server.address`) is stored as "otlp" — maps to no endpoint.
- its model is the endpoint's model (`model_matches`): the same name, or LiteLLM's `provider/model` form of it
  (`openai/gpt-4o-mini` for `gpt-4o-mini`, `hosted_vllm/meta-llama/Llama-3.1-8B` for `meta-llama/Llama-3.1-8B`:
  one leading segment before a `/`, then exactly the endpoint's model). One base URL serves many models, and the
  users of one are not the users of another, so a request without a model is not counted. An endpoint whose model
  is empty takes every model sent to its base URL.

Every per-request source counts (SourceKind.per_request: LiteLLM and OpenTelemetry; a Prometheus source keeps hours,
not requests, and is left out). Percentiles are planner.percentiles' (nearest rank, with n) over the TTFTs of the mapped
requests that arrived in [since_ms, until_ms); a request without a TTFT (no first token seen) is not counted.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

from sqlalchemy.engine import Engine

from planner.percentiles import Percentile, summarize
from planner.present import MISSING, ms, too_few
from planner.store.endpoints import endpoint_rows
from planner.store.sources import SourceInfo, list_sources, source_route_ttft_ms, source_routes

__all__ = [
    "API_ROUTES",
    "EndpointAddress",
    "EndpointTarget",
    "ProductionTtft",
    "compare_cell",
    "mapped_sources",
    "model_matches",
    "normalise_base_url",
    "production_by_endpoint",
    "production_for",
    "production_ttft",
    "same_base_url",
    "users_p95_words",
]

#: Routes a client appends to a base URL, dropped from the end of a stored API base before it is compared.
API_ROUTES = ("/chat/completions", "/completions", "/messages", "/responses")
_DEFAULT_PORTS = {"http": 80, "https": 443}


class EndpointTarget(Protocol):
    """What the mapping needs of an endpoint (planner.store.endpoints.EndpointRow has it)."""

    @property
    def base_url(self) -> str: ...

    @property
    def model(self) -> str: ...


@dataclass(frozen=True)
class EndpointAddress:
    """An endpoint as the mapping sees it: where its requests go and which model they ask for."""

    base_url: str
    model: str


def normalise_base_url(url: str) -> str | None:
    """`url` in the one form two base URLs are compared in (see the module's docstring); None when it is not an
    http(s) URL with a host."""
    try:
        parts = urlsplit(url.strip())
        host, port = parts.hostname, parts.port
    except ValueError:  # a port that is not a number, a malformed IPv6 host
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not host:
        return None
    if ":" in host:  # IPv6: urlsplit took the brackets off
        host = f"[{host}]"
    netloc = host if port is None or port == _DEFAULT_PORTS[scheme] else f"{host}:{port}"
    path = parts.path.rstrip("/")
    for route in API_ROUTES:
        if path.endswith(route):
            path = path[: -len(route)].rstrip("/")
            break
    if path.endswith("/v1"):
        path = path[: -len("/v1")].rstrip("/")
    return f"{scheme}://{netloc}{path}"


def same_base_url(api_base: str, base_url: str) -> bool:
    """Whether a stored API base and an endpoint's base URL name the same place (both normalised; never two
    non-URLs)."""
    a = normalise_base_url(api_base)
    return a is not None and a == normalise_base_url(base_url)


def model_matches(request_model: str, endpoint_model: str) -> bool:
    """Whether a request's model is the endpoint's: the same name or LiteLLM's `provider/model` form of it; a request
    without a model never is, and an endpoint without one takes every model."""
    got, want = request_model.strip(), endpoint_model.strip()
    if not want:
        return True
    if not got:
        return False
    return got == want or ("/" in got and got.split("/", 1)[1] == want)


def _routes_to(routes: Iterable[tuple[str, str]], endpoint: EndpointTarget) -> list[tuple[str, str]]:
    return [
        (base, model)
        for base, model in routes
        if same_base_url(base, endpoint.base_url) and model_matches(model, endpoint.model)
    ]


def _request_sources(engine: Engine) -> list[SourceInfo]:
    return [s for s in list_sources(engine) if s.kind.per_request]


@dataclass(frozen=True)
class ProductionTtft:
    """The production TTFT of the requests sent to one endpoint over [since_ms, until_ms) (None: open): p50 and p95
    are planner.percentiles.summarize's over those with a TTFT; `sources` names the sources they came through,
    `api_bases` the API bases (as stored) of the mapped requests of those sources in the window."""

    since_ms: int | None
    until_ms: int | None
    p50: Percentile
    p95: Percentile
    sources: tuple[str, ...] = ()
    api_bases: tuple[str, ...] = ()

    @property
    def n(self) -> int:
        return self.p95.n


def production_ttft(
    engine: Engine, endpoint: EndpointTarget, since_ms: int | None = None, until_ms: int | None = None
) -> ProductionTtft:
    """The TTFT percentiles of every per-request source's requests that map to `endpoint` and arrived in
    [since_ms, until_ms); n is 0 when none did."""
    ttft: list[float] = []
    names: list[str] = []
    bases: set[str] = set()
    for src in _request_sources(engine):
        routes = _routes_to(source_routes(engine, src.id, since_ms, until_ms), endpoint)
        got = source_route_ttft_ms(engine, src.id, routes, since_ms, until_ms)
        if got:
            ttft += got
            names.append(src.name)
            bases.update(base for base, _ in routes)
    pcts = summarize(ttft, (0.5, 0.95))
    return ProductionTtft(since_ms, until_ms, pcts["p50"], pcts["p95"], tuple(names), tuple(sorted(bases)))


def mapped_sources(engine: Engine, endpoint: EndpointTarget) -> tuple[str, ...]:
    """The names of the per-request sources that have ever stored a request mapping to `endpoint`."""
    return tuple(s.name for s in _request_sources(engine) if _routes_to(source_routes(engine, s.id), endpoint))


def production_for(
    engine: Engine, endpoint: EndpointTarget, since_ms: int | None = None, until_ms: int | None = None
) -> ProductionTtft | None:
    """production_ttft, or None when no source has ever sent a request to `endpoint` (nothing maps to it: a page
    says how to add one); with requests stored but none in the window, n is 0 and `sources` names the mapped ones."""
    got = production_ttft(engine, endpoint, since_ms, until_ms)
    if got.n:
        return got
    names = mapped_sources(engine, endpoint)
    return None if not names else ProductionTtft(got.since_ms, got.until_ms, got.p50, got.p95, names)


def production_by_endpoint(
    engine: Engine, names: Sequence[str], since_ms: int | None = None, until_ms: int | None = None
) -> dict[str, ProductionTtft | None]:
    """production_for each named endpoint (a name not registered gets None)."""
    rows = {e.name: e for e in endpoint_rows(engine)}
    return {name: production_for(engine, rows[name], since_ms, until_ms) if name in rows else None for name in names}


def users_p95_words(prod: ProductionTtft | None) -> str | None:
    """The production p95 beside a probe's, in a sentence: "Your users' p95: 412 ms (1,204 requests via
    prod-proxy)"; None when no source maps to the endpoint. Source names are outside text: escape them where the
    sentence is Markdown."""
    if prod is None:
        return None
    via = ", ".join(prod.sources)
    if not prod.n or prod.p95.value is None:
        return f"Your users' p95: — (no requests in this window via {via})"
    noun = "request" if prod.n == 1 else "requests"
    return f"Your users' p95: {too_few(ms(prod.p95.value), prod.p95.reliable)} ({prod.n:,} {noun} via {via})"


def compare_cell(prod: ProductionTtft | None) -> str:
    """A production p95 in a table cell: "412 ms (n=1,204)", "212 ms (n=12) (too few)" below the n a p95 needs (the
    one mark, planner.present.TOO_FEW); "—" where no source maps or no request is in the window."""
    if prod is None or not prod.n or prod.p95.value is None:
        return MISSING
    return too_few(f"{ms(prod.p95.value)} (n={prod.n:,})", prod.p95.reliable)
