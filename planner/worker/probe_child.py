"""A probe process: runs `planner.probes.ttft.probe_once` for the worker, one JSON line per request.

Started by planner.worker.probe_pool as ``python -m planner.worker.probe_child``. Every line either way is one
message of planner.worker.probe_wire (typed, versioned; `version` is WIRE_VERSION). stdin carries requests::

    {"version": 1, "id": 7, "target": {...ProbeTarget fields}, "api_key": "...", "max_attempts": 2,
     "max_retry_wait_s": 5}
    {"version": 1, "cancel": 7}

stdout carries results (ProbeResult): ``{"version": 1, "id": 7, "sample": {...TtftSample fields}}`` or
``{"version": 1, "id": 7, "error": "..."}``; the first line, once imports are done, is
``{"ready": true, "version": 1}``. A request of another version is answered with an error result, never half-read.
Timestamps are taken here, in this process's own event loop, so CPU another process spends on a hostile stream
cannot delay them. The process exits when stdin closes (the worker stopped or died). Logging goes to stderr; nothing
but result lines is written to stdout. The API key travels over the pipe only and is never logged.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys

log = logging.getLogger("planner.worker.probe_child")


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    from planner.probes.ttft import probe_once
    from planner.worker.probe_wire import (
        ProbeCancel,
        ProbeRequest,
        ProbeResult,
        WireError,
        decode_line,
        encode_line,
        parse_child_message,
    )

    tasks: dict[int, asyncio.Task[None]] = {}

    async def reply(result: ProbeResult) -> None:
        writer.write(encode_line(result))
        await writer.drain()

    async def run_one(req: ProbeRequest) -> None:
        try:
            sample = await probe_once(
                req.target,
                api_key=req.api_key,
                max_attempts=req.max_attempts,
                max_retry_wait_s=req.max_retry_wait_s,
            )
            out = ProbeResult(id=req.id, sample=sample)
        except asyncio.CancelledError:
            return
        except Exception as exc:  # noqa: BLE001 - reported to the worker, which stores it as an internal error
            out = ProbeResult(id=req.id, error=f"{type(exc).__name__}: {exc}"[:500])
        finally:
            tasks.pop(req.id, None)
        await reply(out)

    while True:
        line = await reader.readline()
        if not line:
            break
        try:
            data = decode_line(line)
        except WireError:
            log.error("probe process: unreadable request line ignored")
            continue
        try:
            msg = parse_child_message(data)
        except WireError as exc:
            rid = data.get("id")
            if isinstance(rid, int) and not isinstance(rid, bool):  # the worker is waiting for it: say why
                await reply(ProbeResult(id=rid, error=str(exc)[:500]))
            else:
                log.error("probe process: request ignored: %s", exc)
            continue
        if isinstance(msg, ProbeCancel):
            task = tasks.pop(msg.id, None)
            if task is not None:
                task.cancel()
            continue
        tasks[msg.id] = asyncio.create_task(run_one(msg))
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
    from planner.worker.probe_wire import encode_line, ready_message

    writer.write(encode_line(ready_message()))
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
