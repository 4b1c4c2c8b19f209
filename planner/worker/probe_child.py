"""A probe process: runs `planner.probes.ttft.probe_once` for the worker, one JSON line per request.

Started by planner.worker.probe_pool as ``python -m planner.worker.probe_child``.
stdin carries requests, one JSON object a line::

    {"id": 7, "target": {...ProbeTarget fields}, "api_key": "...", "max_attempts": 2, "max_retry_wait_s": 5}
    {"cancel": 7}

stdout carries results: ``{"id": 7, "sample": {...TtftSample fields}}`` or
``{"id": 7, "error": "..."}``; the first line, once imports are done, is ``{"ready": true}``. Timestamps are
taken here, in this process's own event loop, so CPU another process spends on a hostile stream cannot delay them.
The process exits when stdin closes (the worker stopped or died). Logging goes
to stderr; nothing but result lines is written to stdout. The API key travels
over the pipe only and is never logged.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys

log = logging.getLogger("planner.worker.probe_child")


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    from planner.probes.ttft import ProbeTarget, probe_once

    tasks: dict[int, asyncio.Task] = {}

    async def run_one(rid: int, msg: dict) -> None:
        try:
            sample = await probe_once(
                ProbeTarget(**msg["target"]),
                api_key=msg.get("api_key"),
                max_attempts=int(msg.get("max_attempts", 2)),
                max_retry_wait_s=float(msg.get("max_retry_wait_s", 5.0)),
            )
            out = {"id": rid, "sample": sample.to_dict()}
        except asyncio.CancelledError:
            return
        except Exception as exc:  # noqa: BLE001 - reported to the worker, which stores it as an internal error
            out = {"id": rid, "error": f"{type(exc).__name__}: {exc}"[:500]}
        finally:
            tasks.pop(rid, None)
        writer.write(json.dumps(out).encode() + b"\n")
        await writer.drain()

    while True:
        line = await reader.readline()
        if not line:
            break
        try:
            msg = json.loads(line)
        except ValueError:
            log.error("probe process: unreadable request line ignored")
            continue
        if "cancel" in msg:
            task = tasks.pop(int(msg["cancel"]), None)
            if task is not None:
                task.cancel()
            continue
        rid = int(msg["id"])
        tasks[rid] = asyncio.create_task(run_one(rid, msg))
    for task in list(tasks.values()):
        task.cancel()


async def _main() -> None:
    from planner.probes.warmup import warm_up

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, sys.stdout)
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    await warm_up()  # the lazy imports, the CA bundle and a first probe are paid before "ready"

    writer.write(b'{"ready": true}\n')
    await writer.drain()
    await _serve(reader, writer)


def main() -> None:
    """Entry point: probe until stdin closes."""
    import gc

    if "--nice" in sys.argv:  # the quarantine lane yields the CPU to the clean lanes when cores are scarce
        try:
            os.nice(int(sys.argv[sys.argv.index("--nice") + 1]))
        except (OSError, ValueError, IndexError):
            pass
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    gc.collect()
    gc.freeze()  # as the worker does: no full collection over start-up objects inside a timed probe
    try:  # as planner.cli.probe: uvloop has fewer wake-up hops between a read and its timestamp
        import uvloop

        factory = uvloop.new_event_loop
    except ImportError:
        factory = None
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(_main())


if __name__ == "__main__":
    main()
