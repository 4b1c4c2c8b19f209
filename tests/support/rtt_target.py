"""A local RTT target for tests and benchmarks: a tiny HTTP server with TCP_NODELAY.

Routes:
  /ping          204-free 200 "ok", Cache-Control: no-store, Access-Control-Allow-Origin: *,
                 Timing-Allow-Origin: * (a browser may read Resource Timing for it)
  /ping-no-tao   the same without Timing-Allow-Origin (the browser must fall back, labelled)
  /ping-no-cors  neither CORS nor Timing-Allow-Origin headers: what cloud region endpoints usually send
  /redirect-no-cors  302 to /ping-no-cors, no CORS/TAO headers (the browser must follow it in no-cors mode)
  /page          an HTML page that runs the product's browser RTT JS (bench: Chromium in a netns)

uvicorn's own socket setup sets TCP_NODELAY on accepted connections (never Streamlit's
port: its pre-bound socket stalls keep-alive requests by ~40 ms; feasibility note §3).
Run in-process with `serve_in_thread(host, port)` or as `python -m tests.support.rtt_target HOST PORT`, which
prints "ready" once its socket listens (a caller waits for that line, not for a time).
"""

from __future__ import annotations

import socket
import sys
import threading
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse
from starlette.routing import Route

__all__ = ["TargetServer", "app", "free_port", "serve_in_thread"]

_JS = Path(__file__).resolve().parents[2] / "app" / "components" / "browser_rtt.js"


async def _ping(request):
    return PlainTextResponse(
        "ok", headers={"Cache-Control": "no-store", "Access-Control-Allow-Origin": "*", "Timing-Allow-Origin": "*"}
    )


async def _ping_no_tao(request):
    return PlainTextResponse("ok", headers={"Cache-Control": "no-store", "Access-Control-Allow-Origin": "*"})


async def _ping_no_cors(request):
    return PlainTextResponse("ok", headers={"Cache-Control": "no-store"})


async def _redirect_no_cors(request):
    query = request.url.query
    return RedirectResponse(
        "/ping-no-cors" + (f"?{query}" if query else ""), status_code=302, headers={"Cache-Control": "no-store"}
    )


async def _page(request):
    # The page imports the product's measurement module unchanged (served below) and exposes one call.
    return HTMLResponse("""<!doctype html><html><body><div id="root"></div><script type="module">
import { measureTargets } from "/browser_rtt.js";
window.measureTargets = measureTargets; window.ready = true;
</script></body></html>""")


async def _js(request):
    return PlainTextResponse(_JS.read_text(), media_type="text/javascript")


app = Starlette(
    routes=[
        Route("/ping", _ping),
        Route("/ping-no-tao", _ping_no_tao),
        Route("/ping-no-cors", _ping_no_cors),
        Route("/redirect-no-cors", _redirect_no_cors),
        Route("/page", _page),
        Route("/browser_rtt.js", _js),
    ]
)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class _Server(uvicorn.Server):
    """uvicorn.Server that sets `ready` once startup is over (listening, or failed): an event to wait on."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()

    async def startup(self, sockets=None) -> None:
        try:
            await super().startup(sockets)
        finally:
            self.ready.set()


class TargetServer:
    """uvicorn in a daemon thread; `stop()` shuts it down."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int | None = None,
        *,
        certfile: str | None = None,
        keyfile: str | None = None,
    ) -> None:
        self.host, self.port = host, port or free_port(host)
        self.base_url = f"{'https' if certfile else 'http'}://{host}:{self.port}"
        cfg = uvicorn.Config(
            app,
            host=host,
            port=self.port,
            log_level="warning",
            access_log=False,
            lifespan="off",
            ssl_certfile=certfile,
            ssl_keyfile=keyfile,
        )
        self._server = _Server(cfg)
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            self._server.run()
        finally:
            self._server.ready.set()  # also when it died before startup: start() need not wait out its guard

    def start(self) -> TargetServer:
        """Start the thread and return once the socket listens; RuntimeError when startup failed."""
        self._thread.start()
        self._server.ready.wait(60)  # a guard against a hang only: startup sets it, successful or not
        if not self._server.started:
            raise RuntimeError(f"RTT target server on {self.base_url} did not start")
        return self

    def join(self) -> None:
        """Block until the server stops (the `python -m` entry point's foreground)."""
        self._thread.join()

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(5)


def serve_in_thread(host: str = "127.0.0.1", port: int | None = None, **tls: str) -> TargetServer:
    """Start a TargetServer (https when certfile= and keyfile= are given)."""
    return TargetServer(host, port, **tls).start()


if __name__ == "__main__":
    server = serve_in_thread(sys.argv[1], int(sys.argv[2]))
    print("ready", flush=True)
    server.join()
