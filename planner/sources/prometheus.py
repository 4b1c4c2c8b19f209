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
profile's model label (TGI's series carry none). Beside them: the engine's waiting-requests gauge (of the same
model) averaged over the hour, and the p95 of its queue-time histogram (vLLM's request_queue_time_seconds: arrival
to a slot), the worksheet's queueing segment. Every answer is read bounded and checked
(planner.sources.prometheus_api).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from planner.percentiles import min_n_for
from planner.sources.prometheus_api import DEFAULT_DEADLINE_S, MAX_ANSWER_BYTES, PrometheusApi, PrometheusError
from planner.store.sources import HOUR_MS, HourTtft

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


def _gained(series: str, by: str = "") -> str:
    """PromQL: what the counters `series` gained in the hour to each evaluation (summed, by `by`): the last value in
    the hour less the last before it, zero for a series that did not exist before."""
    agg = f"sum by ({by})" if by else "sum"
    now = f"{agg} (max_over_time({series}[1h]))"
    return f"({now} - ({agg} (max_over_time({series}[1h] offset 1h)) or {now} * 0))"


def _profile(profile: str, metric: str | None) -> Profile:
    return PROFILES[profile] if metric is None else Profile(metric, PROFILES[profile].model_label, None)


def _models(api: PrometheusApi, prof: Profile, profile: str) -> list[str]:
    """The model label's values on the profile's counted histogram; PrometheusError when it has no series."""
    seen = api.series(f"{prof.counted}_count")
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
    deadline_s: float = 15.0,
    max_bytes: int = MAX_ANSWER_BYTES,
) -> list[str]:
    """What a Test finds: the models with the profile's TTFT histogram (PrometheusError when none has it, when
    `model` is given and is not among them, or when Prometheus does not answer within `deadline_s` seconds and
    `max_bytes` bytes)."""
    prof = _profile(profile, metric)
    with PrometheusApi(base_url, bearer_token=bearer_token, deadline_s=deadline_s, max_bytes=max_bytes) as api:
        found = _models(api, prof, profile)
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
    deadline_s: float = DEFAULT_DEADLINE_S,
    max_bytes: int = MAX_ANSWER_BYTES,
) -> list[HourTtft]:
    """The hours ending in (start_ms, end_ms], rounded out to whole hours: requests, TTFT p50/p95 (ms), the mean of
    the waiting gauge and the queue-time p95 (ms) per hour, of `model`'s series (every model's when None).

    Every query together gets `deadline_s` seconds, each answer `max_bytes` bytes. PrometheusError (one line naming
    the server) when Prometheus cannot be reached, is too slow or too large, answers anything but its API's
    documented shape, or has no such histogram or model."""
    prof = _profile(profile, metric)
    first_end = (start_ms // HOUR_MS + 1) * HOUR_MS
    last_end = -(-end_ms // HOUR_MS) * HOUR_MS
    start_s, end_s = first_end / 1000, last_end / 1000
    with PrometheusApi(base_url, bearer_token=bearer_token, deadline_s=deadline_s, max_bytes=max_bytes) as api:
        match = _model_match(prof, _models(api, prof, profile), model)
        p50: dict[int, float] = {}
        p95: dict[int, float] = {}
        if prof.ttft:
            buckets = _gained(f"{prof.ttft}_bucket{match}", "le")
            p50 = api.range(f"histogram_quantile(0.5, {buckets})", start_s, end_s)
            p95 = api.range(f"histogram_quantile(0.95, {buckets})", start_s, end_s)
        count = api.range(_gained(f"{prof.counted}_count{match}"), start_s, end_s)
        queue = (
            api.range(f"histogram_quantile(0.95, {_gained(f'{prof.queue}_bucket{match}', 'le')})", start_s, end_s)
            if prof.queue
            else {}
        )
        # the model's own gauge: the same label matcher as its histograms (an unfiltered avg is every model's mean)
        waiting = api.range(f"avg(avg_over_time({prof.waiting}{match}[1h]))", start_s, end_s) if prof.waiting else {}
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
