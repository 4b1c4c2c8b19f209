"""Probe processes: where the worker's probes run, so one endpoint's CPU cannot delay another's timestamps.

A probe's timestamps are taken in the event loop that reads its socket. When a
hostile server floods that loop (100 MB of SSE without a token, a byte trickle,
invalid UTF-8), every other probe in the same loop is timestamped late. So the
worker probes in child processes (planner.worker.probe_child), in *lanes*:

- lane 0, the **quarantine**: endpoints whose last probe failed while reading
  a response it could not use (no token within the caps, bad JSON, not an event
  stream, a stall, a broken stream) — QUARANTINE_CLASSES;
- lanes 1…n, the **clean** lanes: every other endpoint (new, healthy, or failing
  cheaply: refused, DNS, TLS, 401, 404, 429…), spread by endpoint id.

A hostile endpoint never produces a token, so after its first probe it fails
and stays in quarantine with the other misbehaving endpoints until a probe of
it succeeds; healthy endpoints are measured in loops that only well-behaved
streams share. (A new hostile endpoint, or one that turns hostile after a
success, costs one probe's worth of capped reading — planner.probes.ttft's
caps — in a clean lane before it moves.) The quarantine process runs at a lower CPU priority
(nice 10), so on a machine short of cores the kernel serves the clean lanes first.

A lane whose process dies fails its in-flight probes (the worker stores them as
internal errors), is logged, and is restarted on its next probe.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import sys
import time
from collections.abc import Callable

from planner.errors import PlannerError
from planner.probes.ttft import ProbeTarget, TtftSample
from planner.worker.probe_wire import (
    ProbeCancel,
    ProbeRequest,
    ProbeResult,
    WireError,
    decode_line,
    encode_line,
    parse_ready,
)

__all__ = ["QUARANTINE_CLASSES", "ProbePool", "ProbeProcessError", "start_probe_process"]

log = logging.getLogger("planner.worker")

_RESTART_BACKOFF_S = 1.0  # real seconds: it paces restarts of real processes, not the worker's schedule
#: Failures that cost reading a useless response (the costly kind): the endpoint is probed in quarantine.
QUARANTINE_CLASSES = frozenset({"no_content", "bad_json", "not_sse", "read_timeout", "disconnect", "http_error"})
#: The quarantine process runs at this nice level: on a busy machine its CPU goes to the clean lanes first.
QUARANTINE_NICE = 10


class ProbeProcessError(PlannerError, RuntimeError):
    """The probe process of a lane died or could not start; the probe has no sample."""


class _Lane:
    def __init__(self, index: int) -> None:
        self.index = index
        self.proc: asyncio.subprocess.Process | None = None
        self.reader_task: asyncio.Task[None] | None = None
        self.pending: dict[int, asyncio.Future[ProbeResult]] = {}
        self.starting: asyncio.Lock = asyncio.Lock()
        self.last_start = 0.0
        self.restarts = 0


class ProbePool:
    """`clean_lanes` clean probe processes plus one quarantine process (started lazily).

    `mono` paces the restarts of a lane whose process keeps dying: real seconds by default, since it paces real
    processes, not the worker's schedule."""

    def __init__(self, clean_lanes: int = 1, *, mono: Callable[[], float] = time.monotonic) -> None:
        if clean_lanes < 1:
            raise ValueError(f"clean_lanes must be ≥ 1, got {clean_lanes}")
        self.clean_lanes = clean_lanes
        self._mono = mono
        self._lanes = [_Lane(i) for i in range(clean_lanes + 1)]
        self._ids = itertools.count(1)
        self._closed = False

    def lane_for(self, endpoint_id: int, last_error_class: str | None) -> int:
        """0 (quarantine) when the endpoint's last probe failed with one of QUARANTINE_CLASSES, else its clean lane."""
        return 0 if last_error_class in QUARANTINE_CLASSES else 1 + endpoint_id % self.clean_lanes

    async def start(self, timeout_s: float = 60.0) -> None:
        """Start every lane's process and wait until each is ready (imports done). Raises ProbeProcessError."""
        await asyncio.gather(*(self._ensure(ln, timeout_s) for ln in self._lanes))

    @property
    def restarts(self) -> int:
        """Probe processes restarted after dying (for the log and the dashboard)."""
        return sum(lane.restarts for lane in self._lanes)

    async def probe(
        self, target: ProbeTarget, *, api_key: str | None, max_attempts: int, max_retry_wait_s: float, lane: int = 0
    ) -> TtftSample:
        """A TtftSample for `target`, measured in lane `lane`'s process. Raises ProbeProcessError."""
        ln = self._lanes[lane]
        await self._ensure(ln)
        assert ln.proc is not None and ln.proc.stdin is not None
        request = ProbeRequest(
            id=next(self._ids),
            target=target,
            api_key=api_key,
            max_attempts=max_attempts,
            max_retry_wait_s=max_retry_wait_s,
        )
        fut: asyncio.Future[ProbeResult] = asyncio.get_running_loop().create_future()
        ln.pending[request.id] = fut
        try:
            ln.proc.stdin.write(encode_line(request))
            await ln.proc.stdin.drain()
            result = await fut
        except asyncio.CancelledError:
            self._send_cancel(ln, request.id)
            raise
        except (ConnectionError, OSError) as exc:
            raise ProbeProcessError(f"probe process {lane} is gone: {exc}") from None
        finally:
            ln.pending.pop(request.id, None)
        if result.sample is None:
            raise ProbeProcessError(f"probe process {lane}: {result.error}")
        return result.sample

    def _send_cancel(self, ln: _Lane, rid: int) -> None:
        with contextlib.suppress(Exception):
            if ln.proc is not None and ln.proc.stdin is not None and ln.proc.returncode is None:
                ln.proc.stdin.write(encode_line(ProbeCancel(id=rid)))

    async def _ensure(self, ln: _Lane, ready_timeout_s: float = 60.0) -> None:
        if self._closed:
            raise ProbeProcessError("the probe processes are shut down")
        if ln.proc is not None and ln.proc.returncode is None:
            return
        async with ln.starting:
            if ln.proc is not None and ln.proc.returncode is None:
                return
            wait = ln.last_start + _RESTART_BACKOFF_S - self._mono()
            if ln.proc is not None and wait > 0:
                await asyncio.sleep(wait)  # a process that dies at once is not restarted in a hot loop
            if ln.proc is not None:
                ln.restarts += 1
                log.warning("probe process %d exited (code %s): restarting it", ln.index, ln.proc.returncode)
            ln.last_start = self._mono()
            try:
                ln.proc = await start_probe_process(nice=QUARANTINE_NICE if ln.index == 0 else None)
            except OSError as exc:
                ln.proc = None
                raise ProbeProcessError(f"cannot start a probe process: {exc}") from None
            assert ln.proc.stdout is not None
            try:
                first = await asyncio.wait_for(ln.proc.stdout.readline(), timeout=ready_timeout_s)
            except TimeoutError:
                first = b""
            try:
                ready = parse_ready(first)
                problem = f"did not start (exit code {ln.proc.returncode})"
            except WireError as exc:  # a probe process of another version: never sent a request it may misread
                ready, problem = False, f"speaks another wire version: {exc}"
            if not ready:
                with contextlib.suppress(ProcessLookupError):
                    ln.proc.kill()
                raise ProbeProcessError(f"probe process {ln.index} {problem}")
            ln.reader_task = asyncio.create_task(self._read(ln, ln.proc), name=f"probe-lane-{ln.index}")

    async def _read(self, ln: _Lane, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None
        try:
            while True:
                line = await proc.stdout.readline()
                if not line:
                    break
                try:
                    reply = decode_line(line)
                    fut = ln.pending.get(int(reply["id"]))
                except (WireError, ValueError, KeyError, TypeError):
                    log.error("probe process %d wrote an unreadable line; ignored", ln.index)
                    continue
                if fut is None or fut.done():
                    continue
                try:
                    fut.set_result(ProbeResult.from_dict(reply))
                except WireError as exc:  # its probe has no sample: say why rather than wait for the slot's deadline
                    log.error("probe process %d: %s", ln.index, exc)
                    fut.set_exception(ProbeProcessError(f"probe process {ln.index}: {exc}"))
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(proc.wait(), timeout=2.0)
            for fut in list(ln.pending.values()):
                if not fut.done():
                    fut.set_exception(ProbeProcessError(f"probe process {ln.index} exited (code {proc.returncode})"))

    async def close(self) -> None:
        """Stop every probe process (closing its stdin; killed after 3 s)."""
        self._closed = True
        for ln in self._lanes:
            proc = ln.proc
            if proc is None or proc.returncode is not None:
                continue
            with contextlib.suppress(Exception):
                assert proc.stdin is not None
                proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), timeout=3.0)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
        for ln in self._lanes:
            if ln.reader_task is not None:
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await asyncio.wait_for(ln.reader_task, timeout=1.0)


async def start_probe_process(*, nice: int | None = None) -> asyncio.subprocess.Process:
    """Start one probe process (planner.worker.probe_child) running this same code, its stdin and stdout piped;
    `nice` lowers its CPU priority by that much. Raises OSError."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [_package_root(), env.get("PYTHONPATH", "")] if p)
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "planner.worker.probe_child",
        *(["--nice", str(nice)] if nice is not None else []),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env=env,
        limit=1 << 20,
    )


def _package_root() -> str:
    """The directory holding the `planner` package, so the child imports this same code."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
