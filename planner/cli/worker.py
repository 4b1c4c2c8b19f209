"""`ttft-planner worker`, `cold-reading` and `serve`: the probe worker, cold readings, and the one-command app."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import click

from planner import settings
from planner.cli._common import echo_json, fail, open_engine, rule_type, store_option
from planner.cli._measure import run_measuring
from planner.cli._output import SERVER, Shape, no_json, output_option
from planner.cli._renamed import renamed_option
from planner.endpoints.cold_policy import ColdReadingError
from planner.endpoints.registry import EndpointNotFound, ensure_simulated_endpoint, get_endpoint
from planner.fleet.requests import request_cold_reading
from planner.fleet.watch import worker_running
from planner.inputs.validate import (
    ALERT_EVERY_S,
    COLD_IDLE_S,
    LEASE_TTL_S,
    PORT,
    PROBE_PROCESSES,
    RETENTION_DAYS,
    SOURCE_SYNC_S,
)
from planner.store import leases as lease
from planner.store.database import StoreError
from planner.store.requests import get_request
from planner.worker.buffer import DEFAULT_MAX_HELD_ROWS, MAX_HELD_ROWS
from planner.worker.runner import Worker, WorkerConfig, run_worker

__all__ = ["COMMANDS", "dashboard_argv", "demo_simulator_config"]

#: The dashboard's import package: the folder app/, installed under the project's own name (setup.py).
APP_PACKAGE = "ttft_planner_app"


def app_path() -> Path:
    """The dashboard's router script, found where the installed package lives (not imported: planner never imports
    the dashboard): app/streamlit_app.py in a checkout (editable install), site-packages/ttft_planner_app/ from the
    wheel."""
    spec = importlib.util.find_spec(APP_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise click.ClickException(
            f"the dashboard package {APP_PACKAGE} is not installed: `pip install -e .` in the checkout, or the wheel"
        )
    return Path(next(iter(spec.submodule_search_locations))).resolve() / "streamlit_app.py"


def dashboard_argv(port: int, address: str, *extra: str) -> list[str]:
    """The command that serves the dashboard (`ttft-planner serve`, the browser tests, the page benchmarks): Streamlit
    headless on address:port, no usage statistics, the app's static files served; `extra` Streamlit flags after."""
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(app_path()),
        f"--server.port={port}",
        f"--server.address={address}",
        "--server.headless=true",
        "--browser.gatherUsageStats=false",
        "--server.enableStaticServing=true",
        *extra,
    ]


def _logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    for noisy in ("httpx", "httpcore", "uvicorn", "uvicorn.error"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def demo_simulator_config():
    """The built-in simulated endpoint's behaviour: office-hours load, 300 s scale-down, 20 s cold start behind 503s."""
    from planner.simulator import OFFICE_LOAD_CURVE, SimulatorConfig

    return SimulatorConfig(load_curve=OFFICE_LOAD_CURVE, scale_down_window_s=300.0, cold_start_s=20.0, cold_503=True)


def _start_simulator(stack: contextlib.ExitStack, engine) -> None:
    """Serve the built-in simulated endpoint until `stack` closes, and register it as an endpoint."""
    from planner.simulator import running_simulator

    url = stack.enter_context(running_simulator(demo_simulator_config()))
    ensure_simulated_endpoint(engine, url)
    click.echo(f"simulated endpoint at {url}", err=True)


def _worker_options(f):
    """The worker's options. Each is named after its WorkerConfig field, so a command takes them as
    `**worker_options` and builds `WorkerConfig(**worker_options)`."""
    f = click.option(
        "--vantage",
        default="",
        show_default=True,
        envvar=settings.VANTAGE.name,
        show_envvar=True,
        help="Name of where this worker measures from (office, region). Workers of one vantage share a lease; "
        "different vantages probe side by side.",
    )(f)
    f = click.option(
        "--lease-ttl-s",
        type=rule_type(LEASE_TTL_S),
        default=lease.DEFAULT_LEASE_TTL_S,
        show_default=True,
        help="A dead worker's lease expires after this long; a standby of the same vantage then takes over.",
    )(f)
    f = click.option(
        "--probe-processes",
        type=rule_type(PROBE_PROCESSES),
        default=1,
        show_default=True,
        help="Clean probe processes, plus one quarantine process for new and failing endpoints, so a "
        "hostile endpoint's CPU cannot delay another's timestamps; 0 probes in the worker's own loop.",
    )(f)
    f = click.option(
        "--retention-days",
        type=rule_type(RETENTION_DAYS),
        default=None,
        envvar=settings.RETENTION_DAYS.name,
        show_envvar=True,
        help="Days of raw samples to keep (older ones are rolled up hourly). Default: 90.",
    )(f)
    f = click.option(
        "--max-held-rows",
        type=rule_type(MAX_HELD_ROWS),
        default=DEFAULT_MAX_HELD_ROWS,
        show_default=True,
        envvar=settings.MAX_HELD_ROWS.name,
        show_envvar=True,
        help="Probe rows held in memory while the store refuses them (full disk, outage), retried every flush; past "
        "it the oldest are dropped and counted (Probes page, /metrics).",
    )(f)
    f = click.option(
        "--metrics-port",
        type=rule_type(PORT),
        default=None,
        envvar=settings.METRICS_PORT.name,
        show_envvar=True,
        help="Serve Prometheus /metrics on this port (off by default).",
    )(f)
    f = click.option(
        "--metrics-address",
        default="127.0.0.1",
        show_default=True,
        help="Address of /metrics (0.0.0.0 for a Prometheus on another machine).",
    )(f)
    f = click.option(
        "--alerts-every-s",
        type=rule_type(ALERT_EVERY_S),
        default=30.0,
        show_default=True,
        help="How often the lease holder evaluates this vantage's alert rules.",
    )(f)
    f = click.option(
        "--source-sync-s",
        type=rule_type(SOURCE_SYNC_S),
        default=300.0,
        show_default=True,
        help="How often the lease holder reads the live sources (`ttft-planner sources`) into the store; 0: never.",
    )(f)
    f = click.option(
        "--otlp-port",
        type=rule_type(PORT),
        default=None,
        help="Receive every OpenTelemetry source's OTLP/HTTP exports (/v1/traces, /v1/metrics; the bearer token "
        "picks the source) on this port (off by default; 4318 is OTLP/HTTP's).",
    )(f)
    f = click.option(
        "--otlp-address",
        default="127.0.0.1",
        show_default=True,
        help="Address of the OTLP receiver (0.0.0.0 for exporters on other machines).",
    )(f)
    return f


@no_json(SERVER)
@click.command()
@_worker_options
@click.option("--simulator", is_flag=True, help="Also serve the built-in simulated endpoint in this process.")
@click.option("-v", "--verbose", is_flag=True, help="Debug logging.")
@store_option
def worker(simulator, verbose, database_url, **worker_options) -> None:
    """Probe every enabled endpoint of this vantage on its own schedule until SIGTERM/SIGINT.

    It writes every probe row of a registered endpoint. Slots it cannot run are stored as skipped, never
    back-filled; a restart after a crash neither loses nor duplicates stored samples.
    """
    _logging(verbose)
    engine = open_engine(database_url)
    config = WorkerConfig(**worker_options)
    with contextlib.ExitStack() as stack:
        if simulator:
            _start_simulator(stack, engine)
        try:
            run_measuring(run_worker(engine, config))
        except StoreError as exc:  # a read-only database: one line, not a warning every 0.2 s forever
            fail(str(exc))


@renamed_option("--idle", "--idle-s")
@click.command("cold-reading")
@click.argument("endpoint")
@click.option(
    "--idle-s",
    "idle_s",
    type=rule_type(COLD_IDLE_S),
    default=None,
    help="Seconds to idle before the cold probe (default: the endpoint's scale-down window + max(30 s, 10 %)).",
)
@click.option("--vantage", default=None, help="Which vantage's worker runs it (default: the endpoint's, else any).")
@click.option("--wait/--no-wait", default=True, show_default=True, help="Wait for the result.")
@output_option(Shape.OBJECT)
@store_option
def cold_reading(endpoint, idle_s, vantage, wait, as_json, database_url) -> None:
    """Ask the worker for a cold reading of ENDPOINT: pause its probes, idle past the scale-down window,
    time one cold probe (503s and retries included) then one warm probe. cold − warm estimates segment 2."""
    engine = open_engine(database_url)
    try:
        ep = get_endpoint(engine, endpoint)
    except EndpointNotFound as exc:
        raise click.BadParameter(str(exc), param_hint="ENDPOINT") from None
    vantage = ep.vantage if vantage is None else vantage
    assert ep.id is not None  # a stored endpoint has an id
    try:  # the Probes page's button asks the same way (planner.fleet.requests)
        req_id, idle = request_cold_reading(
            engine, ep.id, vantage or "", scale_down_window_s=ep.scale_down_window_s, idle_s=idle_s
        )
    except ColdReadingError as exc:
        raise click.BadParameter(str(exc), param_hint="--idle-s") from None
    if not worker_running(engine, vantage or None, int(time.time() * 1000)):
        click.echo(
            f"warning: no worker is running{f' for vantage {vantage!r}' if vantage else ''}; "
            "the reading starts when one does (ttft-planner worker)",
            err=True,
        )
    if not wait:
        if as_json:
            echo_json({"id": req_id, "endpoint": ep.name, "status": "queued", "idle_s": idle})
        else:
            click.echo(f"queued cold reading #{req_id} of {ep.name} (idle {idle:g} s)")
        return
    click.echo(f"cold reading of {ep.name}: idling {idle:g} s, then one cold and one warm probe…", err=True)
    while True:
        req = get_request(engine, req_id)
        if req is None:
            fail(f"request #{req_id} disappeared (was the endpoint removed?)")
        if req["status"] in ("done", "failed"):
            break
        time.sleep(1.0)
    if as_json:
        echo_json(req)
    else:
        click.echo(f"{req['status']}: {req['detail'] or ''}")
    if req["status"] != "done":
        sys.exit(1)


async def _serve(engine, config: WorkerConfig, proc: subprocess.Popen) -> None:
    w = Worker(engine, config)

    async def watch() -> None:
        while proc.poll() is None:
            await asyncio.sleep(0.5)
        logging.getLogger("planner.worker").warning(
            "the dashboard exited (code %s): stopping the worker", proc.returncode
        )
        w.request_stop()

    watcher = asyncio.create_task(watch())
    try:
        await run_worker(engine, worker=w)
    finally:
        watcher.cancel()


@no_json(SERVER)
@click.command()
@click.option("--port", type=rule_type(PORT), default=8501, show_default=True, help="Dashboard port.")
@click.option(
    "--address", default="127.0.0.1", show_default=True, help="Dashboard address (0.0.0.0 to share on a LAN)."
)
@click.option("--no-simulator", is_flag=True, help="Do not start the built-in simulated endpoint.")
@click.option(
    "--no-worker",
    is_flag=True,
    help="Serve the dashboard only (a team runs its workers as their own services: docs/deploy.md).",
)
@click.option(
    "--secrets-file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Streamlit secrets.toml to use ([auth] turns sign-in on), e.g. /etc/ttft-planner/secrets.toml.",
)
@_worker_options
@store_option
def serve(port, address, no_simulator, no_worker, secrets_file, database_url, **worker_options) -> None:
    """Start the dashboard, the probe worker and the simulated endpoint together; Ctrl-C stops them together."""
    _logging(False)
    engine = open_engine(database_url)
    config = WorkerConfig(**worker_options)
    if not settings.PUBLIC_URL.raw():  # alerts link to the Probes page of this dashboard, on the port it serves
        host = "localhost" if address in ("127.0.0.1", "0.0.0.0", "::", "::1", "localhost") else address
        os.environ[settings.PUBLIC_URL.name] = f"http://{host}:{port}"
    env = dict(os.environ)
    if database_url:
        env[settings.DATABASE_URL.name] = database_url
    with contextlib.ExitStack() as stack:
        if not no_simulator:
            _start_simulator(stack, engine)
        proc = subprocess.Popen(
            dashboard_argv(port, address, *([f"--secrets.files={secrets_file}"] if secrets_file else [])), env=env
        )
        what = "no worker" if no_worker else f"worker vantage {config.vantage!r}"
        click.echo(f"dashboard at http://{address}:{port}  ({what}; Ctrl-C stops everything)", err=True)
        try:
            if no_worker:
                # SIGTERM would end this process at once and leave the dashboard serving on its own: end it the
                # way Ctrl-C does, through the `finally` below that stops the dashboard too
                signal.signal(signal.SIGTERM, _exit_on_signal)
                proc.wait()
            else:
                run_measuring(_serve(engine, config, proc))
        except StoreError as exc:
            fail(str(exc))
        finally:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()


def _exit_on_signal(signum: int, _frame) -> None:
    raise SystemExit(0)


COMMANDS = [worker, cold_reading, serve]
