"""The worker's OpenTelemetry receiver (opt-in: `--otlp-port`): every OpenTelemetry source's OTLP/HTTP endpoint on one
port, in the worker's own event loop (planner.sources.otlp.shared_receiver_app: the bearer token picks the source).

Every worker that is given a port serves it, lease or not: exporters push to an address, not to a lease holder, and
the store keeps one row per span, so two receivers of one source never double anything. The worker keeps its own
signal handling (uvicorn's is switched off); a receiver that cannot listen (its port taken: uvicorn would exit the
process) is recorded as a task failure and restarted by the supervisor, and the worker goes on probing. Bodies are
decoded and stored off the event loop (the worker's probes share it), and an export the store cannot take (locked,
unreachable) is answered 503 with Retry-After, which the exporter sends again while it retries.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator

import uvicorn
from sqlalchemy.engine import Engine

from planner.sources.otlp import shared_receiver_app, wall_ms

__all__ = ["OtlpReceiver"]

log = logging.getLogger("planner.worker")


class _Server(uvicorn.Server):
    """uvicorn's server without its signal handlers: the worker's SIGTERM stays the worker's."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class OtlpReceiver:
    """Serves /v1/traces and /v1/metrics for every OpenTelemetry source on `address`:`port` until cancelled;
    `now_ms` (UTC epoch ms) is the clock a span's start is checked against (more than a day ahead: refused)."""

    def __init__(
        self, engine: Engine, *, port: int, address: str = "127.0.0.1", now_ms: Callable[[], int] = wall_ms
    ) -> None:
        self.engine = engine
        self.port = port
        self.address = address
        self.now_ms = now_ms
        self.server: _Server | None = None

    @property
    def started(self) -> bool:
        """True once it listens (tests wait on it)."""
        return self.server is not None and self.server.started

    async def run(self) -> None:
        config = uvicorn.Config(
            shared_receiver_app(self.engine, now_ms=self.now_ms),
            host=self.address,
            port=self.port,
            log_level="warning",
            access_log=False,
            lifespan="off",
        )
        self.server = _Server(config)
        log.info("receiving OTLP for the OpenTelemetry sources on http://%s:%d/v1/", self.address, self.port)
        try:
            await self.server.serve()
        except SystemExit:  # uvicorn exits the process when it cannot listen: here the supervisor tries again
            raise OSError(f"the OTLP receiver could not listen on {self.address}:{self.port}") from None
        finally:
            self.server.should_exit = True
        if not self.server.started:  # stopped before it listened
            raise OSError(f"the OTLP receiver could not listen on {self.address}:{self.port}")
