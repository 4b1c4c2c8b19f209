"""Run the simulated endpoint: in a background thread (tests, demos) or in the foreground (CLI).

Both use uvicorn with host/port sockets, whose accepted connections get
TCP_NODELAY (uvloop sets it always; asyncio when the socket is IPPROTO_TCP).
Without it each token after the first can be held ~40 ms by Nagle's algorithm.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

import uvicorn
from starlette.applications import Starlette

from planner.errors import PlannerError
from planner.simulator.app import build_app
from planner.simulator.config import SimulatorConfig

__all__ = ["SimulatorStartError", "running_simulator", "serve_forever"]


class SimulatorStartError(PlannerError, RuntimeError):
    """The simulated endpoint could not start (port taken, bad host); the message says which."""


@contextlib.contextmanager
def running_simulator(
    config: SimulatorConfig | None = None, host: str = "127.0.0.1", port: int = 0, *, app: Starlette | None = None
) -> Iterator[str]:
    """Serve a simulated endpoint on host:port (0 = a free port) in a thread; yields its base URL. `app`: serve this
    one (build_app's, whose engine the caller reads) instead of a new one of `config`.

    The URL is OpenAI style, e.g. "http://127.0.0.1:41234/v1" (Anthropic clients
    use the same base). The server stops when the block exits. Raises
    SimulatorStartError if it is not listening within 15 s.
    """
    app = app or build_app(config or SimulatorConfig())
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=1,
        )
    )
    errors: list[BaseException] = []

    def run() -> None:
        try:
            server.run()
        except BaseException as exc:  # noqa: BLE001 - reported to the caller below
            errors.append(exc)

    thread = threading.Thread(target=run, name=f"simulator-{host}:{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if errors or not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            reason = errors[0] if errors else "it exited (is the port in use?)" if not thread.is_alive() else "timeout"
            raise SimulatorStartError(f"simulated endpoint could not start on {host}:{port}: {reason}")
        time.sleep(0.01)
    bound = server.servers[0].sockets[0].getsockname()[1]
    url_host = f"[{host}]" if ":" in host else host
    try:
        yield f"http://{url_host}:{bound}/v1"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def serve_forever(
    config: SimulatorConfig, host: str = "127.0.0.1", port: int = 8765, log_level: str = "warning"
) -> None:
    """Serve the simulated endpoint in the foreground until interrupted (Ctrl-C)."""
    uvicorn.run(build_app(config), host=host, port=port, log_level=log_level, lifespan="off")
