"""A real Prometheus server (Debian's `prometheus` package) for a test: scraping given targets every second.

Started with its own data folder and a free port; stopped (and its folder removed) when the block exits. Skips the
test when the binary is missing, except under CI=true, where the project's install script must have installed it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.rtt_target import free_port
from tests.support.waiting import wait_for

__all__ = ["running_prometheus"]


@contextlib.contextmanager
def running_prometheus(targets: list[str], metrics_path: str = "/metrics") -> Iterator[str]:
    """Prometheus scraping `targets` (host:port) every second; yields its base URL once every target is up."""
    binary = shutil.which("prometheus")
    if binary is None:
        if os.environ.get("CI") == "true":
            raise RuntimeError("prometheus is not installed: scripts/install-system-deps.sh installs it")
        pytest.skip("prometheus is not installed (apt-get install prometheus)")
    folder = Path(tempfile.mkdtemp(prefix="ttft-prometheus-"))
    port = free_port()
    quoted = ", ".join(f"'{t}'" for t in targets)
    (folder / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n"
        f"  - job_name: engines\n    metrics_path: {metrics_path}\n    static_configs:\n      - targets: [{quoted}]\n"
    )
    log = open(folder / "log", "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [
            binary,
            f"--config.file={folder / 'prometheus.yml'}",
            f"--storage.tsdb.path={folder / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"

    def all_up() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"prometheus exited: {(folder / 'log').read_text()[-2000:]}")
        try:
            active = httpx.get(f"{url}/api/v1/targets", timeout=2).json()["data"]["activeTargets"]
        except (httpx.HTTPError, ValueError, KeyError):
            return False
        return len(active) == len(targets) and all(t["health"] == "up" for t in active)

    try:
        wait_for(all_up, timeout_s=120, what="prometheus scraping every target")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        shutil.rmtree(folder, ignore_errors=True)
