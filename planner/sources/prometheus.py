"""Production TTFT per hour from Prometheus: the engines' own first-token histograms, read over its HTTP API.

Each hour's figures come from what its counters gained in the hour: a counter's last value in the hour less its last
value before (`max_over_time(c[1h]) - max_over_time(c[1h] offset 1h)`, zero before a series existed). The p50/p95
are `histogram_quantile` over the buckets' gains (exact to the histogram's bucket resolution: Prometheus interpolates
linearly inside the bucket holding the quantile), the requests the count's gain. Not increase(): it needs two samples
in the hour and extrapolates a short series past them, so a series that first appears with its final value (an
engine that made its histogram at the first request) would read as nothing. A counter reset inside an hour (an engine
restart) undercounts that hour. Metric names come from a profile — vLLM's `vllm:time_to_first_token_seconds`,
SGLang's `sglang:time_to_first_token_seconds`; TGI has none, so its profile reads the queue-time histogram alone
(`tgi_request_queue_duration`, whose count is the requests) — or a custom histogram name; `model` filters on the
profile's model label (TGI's series carry none). Beside them: the engine's waiting-requests gauge averaged over the
hour, and the p95 of its queue-time histogram (vLLM's request_queue_time_seconds: arrival to a slot), the
worksheet's queueing segment.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from planner.errors import PlannerError
from planner.stats import min_n_for
from planner.store.sources import HOUR_MS, HourTtft
from planner.urls import UrlError, check_url

__all__ = [
    "HOUR_MS",
    "MIN_REQUESTS_FOR_P95",
    "PROFILES",
    "HourTtft",
    "PrometheusError",
    "Profile",
    "busiest_hour",
    "found_words",
    "models",
    "queue_hour_for_worksheet",
    "ttft_by_hour",
]

MIN_REQUESTS_FOR_P95 = min_n_for(0.95)  # below it an hour's p95 is just its largest value


@dataclass(frozen=True)
class Profile:
    ttft: str | None  # the TTFT histogram's name (without _bucket); None where the engine has none (TGI)
    model_label: str  # "" where the engine's series carry no model (one server, one model)
    waiting: str | None  # the queued-requests gauge
    queue: str | None = None  # the queue-time histogram (arrival to a slot): the worksheet's queueing segment

    @property
    def counted(self) -> str:
        """The histogram whose count is the hour's requests: the TTFT one, else the queue-time one."""
        name = self.ttft or self.queue
        assert name is not None  # every profile has one of them
        return name


PROFILES = {
    "vllm": Profile(
        "vllm:time_to_first_token_seconds",
        "model_name",
        "vllm:num_requests_waiting",
        "vllm:request_queue_time_seconds",
    ),
    "sglang": Profile("sglang:time_to_first_token_seconds", "model_name", "sglang:num_queue_reqs"),
    # TGI has no first-token histogram: its queue time (the queueing segment) and queue size, per server
    "tgi": Profile(None, "", "tgi_queue_size", "tgi_request_queue_duration"),
}


class PrometheusError(PlannerError, RuntimeError):
    """Prometheus cannot answer: unreachable, an error from the query, or no such metric or label value."""


def _get(client: httpx.Client, path: str, params: dict[str, Any]) -> Any:
    try:
        r = client.get(path, params=params)
    except httpx.HTTPError as exc:
        raise PrometheusError(f"Prometheus at {client.base_url} cannot be reached: {exc}") from None
    try:
        body = r.json()
    except ValueError:
        raise PrometheusError(f"{client.base_url}{path} answered {r.status_code}, not Prometheus' JSON") from None
    if body.get("status") != "success":
        raise PrometheusError(f"Prometheus refused the query: {body.get('errorType', '')} {body.get('error', '')}")
    return body["data"]


def _series(client: httpx.Client, name: str) -> list[dict[str, str]]:
    return list(_get(client, "/api/v1/series", {"match[]": name}))


def _range(client: httpx.Client, query: str, start_s: float, end_s: float) -> dict[int, float]:
    data = _get(client, "/api/v1/query_range", {"query": query, "start": start_s, "end": end_s, "step": 3600})
    out: dict[int, float] = {}
    for series in data.get("result", []):
        for t, v in series.get("values", []):
            value = float(v)
            if math.isfinite(value):
                out[int(round(float(t) * 1000))] = value
    return out


def _gained(series: str, by: str = "") -> str:
    """PromQL: what the counters `series` gained in the hour to each evaluation (summed, by `by`): the last value in
    the hour less the last before it, zero for a series that did not exist before."""
    agg = f"sum by ({by})" if by else "sum"
    now = f"{agg} (max_over_time({series}[1h]))"
    return f"({now} - ({agg} (max_over_time({series}[1h] offset 1h)) or {now} * 0))"


def _profile(profile: str, metric: str | None) -> Profile:
    return PROFILES[profile] if metric is None else Profile(metric, PROFILES[profile].model_label, None)


def _client(base_url: str, bearer_token: str | None, timeout_s: float) -> httpx.Client:
    """A client for Prometheus at `base_url` (checked first), with the bearer token a guarded server wants."""
    try:
        base_url = check_url(base_url, what="the Prometheus URL", allow_credentials=True)
    except UrlError as exc:
        raise PrometheusError(str(exc)) from None
    headers = {"Authorization": f"Bearer {bearer_token}"} if bearer_token else {}
    return httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout_s, headers=headers)


def _models(client: httpx.Client, prof: Profile, profile: str) -> list[str]:
    """The model label's values on the profile's counted histogram; PrometheusError when it has no series."""
    seen = _series(client, f"{prof.counted}_count")
    if not seen:
        raise PrometheusError(
            f"Prometheus has no series named {prof.counted}_count: is the engine scraped, and is this its profile "
            f"({profile})? Give the histogram's name for another engine."
        )
    return sorted({s.get(prof.model_label, "") for s in seen}) if prof.model_label else []


def _model_match(prof: Profile, models: list[str], model: str | None) -> str:
    """The PromQL label matcher for `model` ("" for every model); PrometheusError when no series has it."""
    if model is None:
        return ""
    if not prof.model_label:
        raise PrometheusError(f"{prof.counted} has no model label (one server serves one model): leave the model out")
    if model not in models:
        raise PrometheusError(
            f"no series of {prof.counted} has {prof.model_label}={model!r}; it has {', '.join(models) or 'none'}"
        )
    return "{" + prof.model_label + '="' + model.replace("\\", "\\\\").replace('"', '\\"') + '"}'


def found_words(profile: str, found: Sequence[str], metric: str | None = None) -> str:
    """What a Test found, in words: "vllm:time_to_first_token_seconds for m1, m2"."""
    prof = _profile(profile, metric)
    return f"{prof.counted} for {', '.join(found)}" if found else f"{prof.counted} (one server: no model label)"


def models(
    base_url: str,
    *,
    profile: str = "vllm",
    metric: str | None = None,
    model: str | None = None,
    bearer_token: str | None = None,
    timeout_s: float = 10.0,
) -> list[str]:
    """What a Test finds: the models with the profile's TTFT histogram (PrometheusError when none has it, or when
    `model` is given and is not among them)."""
    prof = _profile(profile, metric)
    with _client(base_url, bearer_token, timeout_s) as client:
        found = _models(client, prof, profile)
    _model_match(prof, found, model)
    return found


def ttft_by_hour(
    base_url: str,
    start_ms: int,
    end_ms: int,
    *,
    profile: str = "vllm",
    metric: str | None = None,
    model: str | None = None,
    bearer_token: str | None = None,
    timeout_s: float = 30.0,
) -> list[HourTtft]:
    """The hours ending in (start_ms, end_ms], rounded out to whole hours: requests and TTFT p50/p95 per hour."""
    prof = _profile(profile, metric)
    first_end = (start_ms // HOUR_MS + 1) * HOUR_MS
    last_end = -(-end_ms // HOUR_MS) * HOUR_MS
    with _client(base_url, bearer_token, timeout_s) as client:
        match = _model_match(prof, _models(client, prof, profile), model)
        p50: dict[int, float] = {}
        p95: dict[int, float] = {}
        if prof.ttft:
            buckets = _gained(f"{prof.ttft}_bucket{match}", "le")
            p50 = _range(client, f"histogram_quantile(0.5, {buckets})", first_end / 1000, last_end / 1000)
            p95 = _range(client, f"histogram_quantile(0.95, {buckets})", first_end / 1000, last_end / 1000)
        count = _range(client, _gained(f"{prof.counted}_count{match}"), first_end / 1000, last_end / 1000)
        queue = (
            _range(
                client,
                f"histogram_quantile(0.95, {_gained(f'{prof.queue}_bucket{match}', 'le')})",
                first_end / 1000,
                last_end / 1000,
            )
            if prof.queue
            else {}
        )
        waiting = (
            _range(client, f"avg(avg_over_time({prof.waiting}[1h]))", first_end / 1000, last_end / 1000)
            if prof.waiting
            else {}
        )
    out = []
    for end in range(first_end, last_end + 1, HOUR_MS):
        n = count.get(end, 0.0)
        out.append(
            HourTtft(
                end - HOUR_MS,
                n,
                p50.get(end, math.nan) * 1000 if n and end in p50 else None,
                p95.get(end, math.nan) * 1000 if n and end in p95 else None,
                waiting.get(end),
                queue[end] * 1000 if n and end in queue else None,
            )
        )
    return out


def busiest_hour(hours: Sequence[HourTtft]) -> HourTtft | None:
    """The hour with the most requests (the later on a tie); None when no hour has any."""
    busy = [h for h in hours if h.requests > 0]
    return max(busy, key=lambda h: (h.requests, h.hour_start_ms)) if busy else None


def queue_hour_for_worksheet(hours: Sequence[HourTtft]) -> HourTtft | None:
    """The hour whose queue p95 fills the worksheet's queueing segment: the largest queue p95 among the hours with
    enough requests for a p95 (MIN_REQUESTS_FOR_P95); None when no hour has that many."""
    enough = [h for h in hours if h.requests >= MIN_REQUESTS_FOR_P95 and h.queue_p95_ms is not None]
    return max(enough, key=lambda h: (h.queue_p95_ms or 0.0, h.requests)) if enough else None
