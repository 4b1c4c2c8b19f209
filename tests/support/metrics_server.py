"""A server answering a fixed Prometheus exposition (the text format) on every GET: engine metrics a real Prometheus
scrapes, with figures the test chose. `TWO_MODELS` is vLLM's names for two models of one server: m1 (30 requests,
2 waiting) and m2 (50 requests, 10 waiting)."""

from __future__ import annotations

import contextlib
import http.server
import threading
from collections.abc import Iterator

__all__ = ["TWO_MODELS", "exposition_server"]

TWO_MODELS = "".join(
    f"""vllm:time_to_first_token_seconds_bucket{{model_name="{m}",le="0.1"}} {n}
vllm:time_to_first_token_seconds_bucket{{model_name="{m}",le="+Inf"}} {n}
vllm:time_to_first_token_seconds_sum{{model_name="{m}"}} {n * 0.05}
vllm:time_to_first_token_seconds_count{{model_name="{m}"}} {n}
vllm:num_requests_waiting{{model_name="{m}"}} {waiting}
"""
    for m, n, waiting in (("m1", 30, 2), ("m2", 50, 10))
)


@contextlib.contextmanager
def exposition_server(exposition: str) -> Iterator[str]:
    """A server answering `exposition` on every GET, in a thread, for the block; yields its host:port."""

    class Metrics(http.server.BaseHTTPRequestHandler):
        disable_nagle_algorithm = True  # TCP_NODELAY, like every local test server

        def do_GET(self):  # noqa: N802
            body = exposition.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Metrics)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
