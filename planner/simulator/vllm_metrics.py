"""The simulated server's Prometheus metrics, under vLLM's names: what a team's engines expose and Prometheus scrapes.

`/metrics` serves, per model name: `vllm:time_to_first_token_seconds` (a histogram with vLLM's buckets: arrival at
the engine to the first token, the network segment not included), `vllm:request_queue_time_seconds` (arrival to a
slot: the queueing segment), `vllm:num_requests_running` and `vllm:num_requests_waiting`. Each first token is also
kept in `ttft_log` (model, seconds, wall-clock epoch ms) and each wait in `queue_log`: the simulator's own request
log, which the Prometheus source's percentiles are proven against.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Gauge, Histogram, generate_latest

__all__ = ["VLLM_QUEUE_BUCKETS_S", "VLLM_TTFT_BUCKETS_S", "SimMetrics"]

# vLLM's buckets for time_to_first_token_seconds (vllm/engine/metrics.py, v0.6–v0.10)
VLLM_TTFT_BUCKETS_S = (
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
    160.0, 640.0, 2560.0,
)  # fmt: skip
# vLLM's buckets for request_queue_time_seconds (its request-latency buckets)
VLLM_QUEUE_BUCKETS_S = (
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0,
    1920.0, 7680.0,
)  # fmt: skip


class SimMetrics:
    """One app's registry (never the process-wide default: several simulators may share a process)."""

    def __init__(self, running: Callable[[], int], waiting: Callable[[], int]) -> None:
        self.registry = CollectorRegistry()
        self.ttft = Histogram(
            "vllm:time_to_first_token_seconds",
            "Time to first token (s), arrival at the engine to the first token.",
            ["model_name"],
            buckets=VLLM_TTFT_BUCKETS_S,
            registry=self.registry,
        )
        self.queue = Histogram(
            "vllm:request_queue_time_seconds",
            "Time waiting for a slot (s), arrival at the engine to the start of prefill.",
            ["model_name"],
            buckets=VLLM_QUEUE_BUCKETS_S,
            registry=self.registry,
        )
        Gauge("vllm:num_requests_running", "Requests holding a slot.", registry=self.registry).set_function(running)
        Gauge("vllm:num_requests_waiting", "Requests queued for a slot.", registry=self.registry).set_function(waiting)
        self.ttft_log: list[tuple[str, float, int]] = []
        self.queue_log: list[tuple[str, float]] = []

    def scheduled(self, model: str, queue_s: float) -> None:
        self.queue.labels(model_name=model).observe(queue_s)
        self.queue_log.append((model, queue_s))

    def first_token(self, model: str, ttft_s: float, at_ms: int) -> None:
        self.ttft.labels(model_name=model).observe(ttft_s)
        self.ttft_log.append((model, ttft_s, at_ms))

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
