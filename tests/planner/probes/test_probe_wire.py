"""One sample's shape from the probe to the stored row.

- TtftSample (planner.probes.ttft) and ProbeSampleRow (planner.store.probes) mirror each other: every field of a
  sample has a same-named, compatible column, and sample_row carries each value over (and the store keeps it);
- the probe request and its result cross into a probe process and back as planner.worker.probe_wire's typed,
  versioned messages: they survive the JSON line whole, and a message of another version is refused with a clear
  error on both ends of the pipe (a real probe process, a real pipe).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
import types
import typing

import pytest
import sqlalchemy as sa
from sqlmodel import select

from planner.endpoints.samples import SampleKind
from planner.probes.ttft import ProbeTarget, TtftSample
from planner.store import session
from planner.store.database import table_of
from planner.store.endpoints import get_or_create_manual_endpoint
from planner.store.probes import ProbeSampleRow, insert_samples, sample_row
from planner.worker.probe_pool import ProbePool, ProbeProcessError, start_probe_process
from planner.worker.probe_wire import (
    WIRE_VERSION,
    ProbeCancel,
    ProbeRequest,
    ProbeResult,
    WireError,
    decode_line,
    encode_line,
    parse_child_message,
    parse_ready,
    ready_message,
    sample_from_dict,
)

HANG_GUARD_S = 120.0  # real seconds before a pipe read counts as a hang (not a speed check)

SAMPLE_HINTS = typing.get_type_hints(TtftSample)


def _split(hint: object) -> tuple[set[type], bool]:
    """(the non-None types of a field's annotation, whether it admits None)."""
    args = typing.get_args(hint) if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union else ()
    args = args or (hint,)
    return {a for a in args if a is not type(None)}, type(None) in args


def _value(name: str, hint: object, i: int) -> object:
    """A value of `hint` unlike the field's default (and unlike every other field's)."""
    (kind,), _ = _split(hint)
    if kind is bool:
        default = next(f.default for f in dataclasses.fields(TtftSample) if f.name == name)
        return not default
    if kind is int:
        return 1_796_000_000_000 + i if name == "started_at_ms" else 1000 + i
    if kind is float:
        return 10.25 + i
    assert kind is str, f"TtftSample.{name}: a type this test does not know ({hint})"
    return f"v{i}"


def full_sample() -> TtftSample:
    """A TtftSample with every field set, each to a value of its own."""
    return TtftSample(**{name: _value(name, hint, i) for i, (name, hint) in enumerate(SAMPLE_HINTS.items())})


# ------------------------------------------------------------------ TtftSample ↔ ProbeSampleRow


@pytest.mark.parametrize("name", list(SAMPLE_HINTS))
def test_every_sample_field_has_a_same_named_compatible_column(name):
    sample_types, sample_none = _split(SAMPLE_HINTS[name])
    assert name in ProbeSampleRow.model_fields, f"ProbeSampleRow has no column {name} for TtftSample.{name}"
    row_types, row_none = _split(ProbeSampleRow.model_fields[name].annotation)
    assert sample_types <= row_types, f"{name}: TtftSample {sample_types} vs ProbeSampleRow {row_types}"
    assert row_none or not sample_none, f"{name}: a sample may leave it None, the row may not"
    column = table_of(ProbeSampleRow).columns[name]
    sql_type = column.type.impl_instance if isinstance(column.type, sa.types.TypeDecorator) else column.type
    stored_as = sql_type.python_type  # (through SQLModel's AutoString, a String, to str)
    assert stored_as in sample_types, f"{name}: column type {column.type} for {sample_types}"
    assert column.nullable or not sample_none, f"{name}: a sample may leave it None, the column is NOT NULL"


def test_sample_row_carries_every_field_over():
    s = full_sample()
    row = sample_row(s, 7, "office-a", SampleKind.COLD, 1_796_000_060_000, idle_gap_ms=123.5)
    differ = {n: (getattr(s, n), getattr(row, n)) for n in SAMPLE_HINTS if getattr(row, n) != getattr(s, n)}
    assert differ == {}
    assert (row.endpoint_id, row.vantage, row.kind, row.scheduled_at_ms, row.idle_gap_ms) == (
        7,
        "office-a",
        "cold",
        1_796_000_060_000,
        123.5,
    )


def test_the_store_keeps_every_field_of_a_sample(engine):
    ep = get_or_create_manual_endpoint(engine, "http://127.0.0.1:8765/v1", "sim-model", "openai-chat")
    s = full_sample()
    assert insert_samples(engine, [sample_row(s, ep.id, "office-a", "scheduled", 1_796_000_060_000)]) == 1
    with session(engine) as db:
        (stored,) = db.exec(select(ProbeSampleRow)).all()
    assert {n: getattr(stored, n) for n in SAMPLE_HINTS} == dataclasses.asdict(s)


# ------------------------------------------------------------------ the messages


def _request(**over) -> ProbeRequest:
    target = ProbeTarget(base_url="http://127.0.0.1:9/v1", model="m", api_key_env="KEY_VAR", keep_alive=True)
    return ProbeRequest(id=7, target=target, api_key="sk-secret", max_attempts=3, max_retry_wait_s=2.5, **over)


def test_a_request_survives_the_json_line_whole():
    req = _request()
    back = parse_child_message(decode_line(encode_line(req)))
    assert back == req and isinstance(back.target, ProbeTarget)
    assert decode_line(encode_line(req))["version"] == WIRE_VERSION
    cancel = ProbeCancel(id=7)
    assert parse_child_message(decode_line(encode_line(cancel))) == cancel


def test_a_result_survives_the_json_line_whole_with_every_sample_field():
    s = full_sample()
    back = ProbeResult.from_dict(decode_line(encode_line(ProbeResult(id=3, sample=s))))
    assert back.sample == s and isinstance(back.sample, TtftSample) and back.error is None
    failed = ProbeResult.from_dict(decode_line(encode_line(ProbeResult(id=4, error="RuntimeError: boom"))))
    assert (failed.id, failed.sample, failed.error) == (4, None, "RuntimeError: boom")


@pytest.mark.parametrize("version", [WIRE_VERSION + 1, 0, None, "1", True])
def test_a_message_of_another_version_is_refused_naming_both_versions(version):
    for data in (
        _request().to_dict(),
        ProbeResult(id=1, sample=full_sample()).to_dict(),
        ProbeCancel(id=1).to_dict(),
    ):
        data = (
            {**data, "version": version} if version is not None else {k: v for k, v in data.items() if k != "version"}
        )
        with pytest.raises(WireError, match=rf"wire version {version!r} is not supported .*version {WIRE_VERSION}\)"):
            if "sample" in data:
                ProbeResult.from_dict(data)
            else:
                parse_child_message(data)
    with pytest.raises(WireError, match="not supported"):
        ProbeRequest(id=1, target=_request().target, version=WIRE_VERSION + 1)


def test_unknown_or_missing_fields_are_refused_and_the_key_never_shows():
    with pytest.raises(WireError, match="unknown field"):
        ProbeRequest.from_dict({**_request().to_dict(), "priority": 1})
    with pytest.raises(WireError, match="probe target: unknown field"):
        ProbeRequest.from_dict({**_request().to_dict(), "target": {"base_url": "u", "model": "m", "colour": "red"}})
    with pytest.raises(WireError, match="sample: unknown field"):
        sample_from_dict({**full_sample().to_dict(), "ttft_us": 1})
    with pytest.raises(WireError, match="started_at_ms"):
        sample_from_dict({"ok": True})
    with pytest.raises(WireError, match="exactly one"):
        ProbeResult(id=1)
    with pytest.raises(WireError) as bad:
        ProbeRequest.from_dict({**_request().to_dict(), "max_attempts": "many"})
    assert "sk-secret" not in str(bad.value) and "sk-secret" not in repr(_request())


def test_the_ready_line_carries_the_version():
    assert parse_ready(encode_line(ready_message()))
    assert not parse_ready(b"") and not parse_ready(b"Traceback (most recent call last):\n")
    with pytest.raises(WireError, match="wire version 99"):
        parse_ready(json.dumps({"ready": True, "version": 99}).encode())


# ------------------------------------------------------------------ both ends of a real pipe


async def _readline(stream: asyncio.StreamReader) -> bytes:
    return await asyncio.wait_for(stream.readline(), HANG_GUARD_S)  # a hang guard, not a figure


def test_a_probe_process_answers_a_request_of_another_version_with_an_error():
    async def main() -> tuple[bool, ProbeResult]:
        proc = await start_probe_process()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            ready = parse_ready(await _readline(proc.stdout))
            proc.stdin.write(encode_line({**_request().to_dict(), "version": WIRE_VERSION + 1}))
            await proc.stdin.drain()
            return ready, ProbeResult.from_dict(decode_line(await _readline(proc.stdout)))
        finally:
            proc.stdin.close()
            await asyncio.wait_for(proc.wait(), HANG_GUARD_S)

    ready, result = asyncio.run(main())
    assert ready
    assert result.id == 7 and result.sample is None
    assert f"wire version {WIRE_VERSION + 1} is not supported" in (result.error or "")


#: A stand-in probe process that answers each request with a result of the next wire version.
_NEWER_CHILD = f"""
import json, sys
for line in sys.stdin:
    rid = json.loads(line)["id"]
    print(json.dumps({{"version": {WIRE_VERSION + 1}, "id": rid, "sample": {{"started_at_ms": 1}}}}), flush=True)
"""


def test_the_pool_fails_a_probe_whose_result_is_of_another_version_at_once():
    async def main() -> str:
        pool = ProbePool(1)
        lane = pool._lanes[1]  # a clean lane, given a process that speaks the next version
        lane.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", _NEWER_CHILD, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
        )
        lane.reader_task = asyncio.create_task(pool._read(lane, lane.proc))
        try:
            with pytest.raises(ProbeProcessError) as failed:
                await asyncio.wait_for(
                    pool.probe(_request().target, api_key=None, max_attempts=1, max_retry_wait_s=0.0, lane=1),
                    HANG_GUARD_S,
                )
            return str(failed.value)
        finally:
            await pool.close()

    message = asyncio.run(main())
    assert f"wire version {WIRE_VERSION + 1} is not supported" in message
