"""The wheel is a real package: built from the sources, installed into a fresh venv, run from outside the checkout.

No network: the wheel is built with the current venv's setuptools (--no-build-isolation) and installed with
--no-deps; the fresh venv sees the current venv's dependencies through a .pth file, but not this checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
from pathlib import Path

import httpx
import pytest

from planner.simulator import SimulatorConfig, running_simulator
from tests.support.rtt_target import free_port
from tests.support.waiting import wait_for

pytestmark = pytest.mark.wheel

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("planner", "app", "assets", "pyproject.toml", "setup.py", "README.md", "LICENSE")


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout_s: float = 300):
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout_s)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The `bin/` folder of a fresh venv holding only the built wheel (plus the current venv's dependencies)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"  # a copy, so no build/ or egg-info lands in the checkout and no stale build/ is shipped
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(ROOT / name, src / name)
    built = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp / "dist"),
            str(src),
        ],
        cwd=tmp,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = (tmp / "dist").glob("ttft_planner-*.whl")

    venv = tmp / "venv"
    made = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp)
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    site = Path(
        _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=tmp).stdout.strip()
    )
    # --force-reinstall: pip runs from the current venv, sees its editable ttft-planner and would skip the wheel.
    done = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            "--force-reinstall",
            str(wheel),
        ],
        cwd=tmp,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (site / "deps-of-the-test-venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv / "bin"


@pytest.fixture()
def elsewhere(tmp_path) -> tuple[Path, dict[str, str]]:
    """A working directory outside the checkout and an environment whose store is a temp SQLite file."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TTFT_PLANNER_") and k != "PYTHONPATH"}
    env["TTFT_PLANNER_DATA_DIR"] = str(tmp_path / "data")
    return tmp_path, env


def test_the_installed_package_is_the_wheel_not_the_checkout(installed, elsewhere):
    cwd, env = elsewhere
    r = _run(
        [
            str(installed / "python"),
            "-c",
            "import planner.asset_files as p, app; print(p.assets_dir()); print(app.__file__)",
        ],
        cwd=cwd,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    assets, app_init = (Path(line) for line in r.stdout.split())
    venv = installed.parent
    assert assets.is_relative_to(venv) and (assets / "regions.toml").is_file(), assets
    assert Path(app_init).is_relative_to(venv), app_init


def test_the_wheel_carries_the_license_its_metadata_names(installed, elsewhere):
    cwd, env = elsewhere
    read = (
        "import importlib.metadata as m; d = m.distribution('ttft-planner'); "
        "print(d.metadata['License-Expression']); print(d.read_text('licenses/LICENSE').split(chr(10))[0].strip())"
    )
    r = _run([str(installed / "python"), "-c", read], cwd=cwd, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == ["Apache-2.0", "Apache License"]


def test_probe_from_the_wheel_measures_and_stores(installed, elsewhere):
    cwd, env = elsewhere
    with running_simulator(SimulatorConfig(prefill_tokens_per_s=20_000, decode_tokens_per_s=2000)) as url:
        r = _run(
            [
                str(installed / "ttft-planner"),
                "probe",
                "--base-url",
                url,
                "--model",
                "sim-model",
                "-n",
                "2",
                "--interval",
                "0",
                "--max-tokens",
                "2",
                "--json",
                "--store",
            ],
            cwd=cwd,
            env=env,
            timeout_s=120,
        )
    assert r.returncode == 0, r.stderr
    lines = [json.loads(line) for line in r.stdout.strip().splitlines()]
    assert [x["type"] for x in lines] == ["sample", "sample", "summary"]
    assert all(x["ok"] and x["ttft_ms"] > 0 for x in lines[:2])
    assert (cwd / "data" / "planner.db").is_file()  # the store was created by the wheel's migrations


def test_commands_that_read_shipped_assets_work_from_the_wheel(installed, elsewhere):
    cwd, env = elsewhere
    r = _run([str(installed / "ttft-planner"), "gpu-fit", "--model", "llama-3.1-8b", "--gpu", "H100"], cwd=cwd, env=env)
    assert r.returncode == 0, r.stderr
    assert "H100" in r.stdout


def test_serve_from_the_wheel_answers_health_and_serves_the_app_static_files(installed, elsewhere):
    cwd, env = elsewhere
    port = free_port()
    proc = subprocess.Popen(
        [str(installed / "ttft-planner"), "serve", "--port", str(port)],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:

        def healthy() -> httpx.Response | None:
            assert proc.poll() is None, "the dashboard exited before it answered"
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/_stcore/health", timeout=2)
            except httpx.TransportError:  # still starting
                return None
            return health if health.status_code == 200 else None

        health = wait_for(healthy, timeout_s=120, what="the dashboard's health check")
        assert health.text == "ok"
        topo = httpx.get(f"http://127.0.0.1:{port}/app/static/topojson/world_110m.json", timeout=5)
        assert topo.status_code == 200 and topo.json()["type"] == "Topology"  # the Regions page's offline map
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            out, _ = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
    assert "Traceback" not in out, out[-3000:]
