"""The wheel is a real package: built from the sources, installed into a fresh venv, run from outside the checkout.

No network: the wheel is built with the current venv's setuptools (--no-build-isolation) and installed with
--no-deps; the fresh venv sees the current venv's dependencies through a .pth file, but not this checkout. Beside it
the venv holds another distribution with a top-level package `app` (the dashboard's folder app/ installs as
`ttft_planner_app`, so the two coexist).
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
from tests.support.router import router_pages
from tests.support.rtt_target import free_port
from tests.support.waiting import wait_for

pytestmark = pytest.mark.wheel

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("planner", "app", "assets", "pyproject.toml", "setup.py", "README.md", "LICENSE")
#: Another distribution's top-level `app` package, installed in the same venv before the wheel.
OTHER_APP_MARKER = "another distribution's app"


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout_s: float = 300):
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout_s)


def _build_wheel(src: Path, dist: Path) -> None:
    """Build the wheel of the project at `src` into `dist` (no network: no deps, no build isolation)."""
    built = _run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(dist), str(src)],
        cwd=dist.parent,
    )
    assert built.returncode == 0, built.stderr[-3000:]


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
    _build_wheel(src, tmp / "dist")
    (wheel,) = (tmp / "dist").glob("ttft_planner-*.whl")
    other = _other_app_wheel(tmp)

    venv = tmp / "venv"
    made = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp)
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    site = Path(
        _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=tmp).stdout.strip()
    )
    # --force-reinstall: pip runs from the current venv, sees its editable ttft-planner and would skip the wheel.
    # The other `app` goes in first: installing the wheel after it must neither fail nor touch it.
    for whl in (other, wheel):
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
                str(whl),
            ],
            cwd=tmp,
        )
        assert done.returncode == 0, done.stderr[-3000:]
    (site / "deps-of-the-test-venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv / "bin"


def _other_app_wheel(tmp: Path) -> Path:
    """A wheel of an unrelated distribution, `other-app`, whose one package is a top-level `app`."""
    src = tmp / "other-app"
    (src / "app").mkdir(parents=True)
    (src / "app" / "__init__.py").write_text(f"MARKER = {OTHER_APP_MARKER!r}\n")
    (src / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=77"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "other-app"\nversion = "1.0"\n\n[tool.setuptools]\npackages = ["app"]\n'
    )
    _build_wheel(src, tmp / "dist")
    (wheel,) = (tmp / "dist").glob("other_app-*.whl")
    return wheel


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
            "import planner.asset_files as p, ttft_planner_app as a; print(p.assets_dir()); print(a.__file__)",
        ],
        cwd=cwd,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    assets, app_init = (Path(line) for line in r.stdout.split())
    venv = installed.parent
    assert assets.is_relative_to(venv) and (assets / "regions.toml").is_file(), assets
    assert Path(app_init).is_relative_to(venv) and Path(app_init).parent.name == "ttft_planner_app", app_init


def test_the_wheel_installs_beside_another_app_package_and_both_import(installed, elsewhere):
    """The wheel's top-level packages are planner and ttft_planner_app, never `app`: another distribution's `app`
    keeps its files, and one interpreter imports both it and the dashboard (its modules, its router script)."""
    cwd, env = elsewhere
    code = (
        "import importlib.metadata as m, json, app, ttft_planner_app.widgets, ttft_planner_app.charts.probes\n"
        "from planner.cli.worker import app_path\n"
        "tops = {f.parts[0] for f in m.distribution('ttft-planner').files if f.parts[0] != '..'}\n"
        "print(json.dumps({'marker': app.MARKER, 'app': app.__file__, 'tops': sorted(tops),\n"
        "    'dashboard': ttft_planner_app.widgets.__file__, 'script': str(app_path())}))\n"
    )
    r = _run([str(installed / "python"), "-c", code], cwd=cwd, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    venv = installed.parent
    assert got["marker"] == OTHER_APP_MARKER
    assert Path(got["app"]).is_relative_to(venv), got["app"]
    assert [top for top in got["tops"] if not top.endswith(".dist-info")] == ["planner", "ttft_planner_app"]
    assert Path(got["dashboard"]).is_relative_to(venv) and Path(got["dashboard"]).parent.name == "ttft_planner_app"
    script = Path(got["script"])
    assert script.is_relative_to(venv) and script == Path(got["dashboard"]).with_name("streamlit_app.py")
    assert script.is_file() and (script.parent / ".streamlit" / "config.toml").is_file()


def test_the_dashboard_from_the_wheel_renders_its_pages_beside_another_app(installed, elsewhere):
    """The router and every page run from the wheel (AppTest, in the venv that also holds another `app`): each page
    imports the dashboard by its installed name."""
    cwd, env = elsewhere
    files = [file for file, *_ in router_pages()]
    code = (
        "from streamlit.testing.v1 import AppTest\n"
        "from planner.cli.worker import app_path\n"
        "at = AppTest.from_file(str(app_path()), default_timeout=120).run()\n"
        f"for file in {files!r}:\n"
        "    assert not at.exception, [e.value for e in at.exception]\n"
        "    at.switch_page(f'views/{file}').run()\n"
        "assert not at.exception, [e.value for e in at.exception]\n"
        "print('rendered')\n"
    )
    r = _run([str(installed / "python"), "-c", code], cwd=cwd, env=env, timeout_s=300)
    assert r.returncode == 0 and r.stdout.split()[-1:] == ["rendered"], (r.stdout + r.stderr)[-3000:]


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
                "--interval-s",
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
    r = _run(
        [str(installed / "ttft-planner"), "capacity", "gpu-fit", "--model", "llama-3.1-8b", "--gpu", "H100"],
        cwd=cwd,
        env=env,
    )
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
        icon = httpx.get(f"http://127.0.0.1:{port}/app/static/favicon.svg", timeout=5)
        assert icon.status_code == 200 and b"<svg" in icon.content  # the tab icon, shipped (never a CDN's)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            out, _ = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
    assert "Traceback" not in out, out[-3000:]
