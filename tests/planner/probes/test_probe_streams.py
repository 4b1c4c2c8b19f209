"""probe_once on every stream shape real servers send, against a local scripted server (no mocks).

Which write each phase is stamped at is checked in stepwise mode (tests/support/servers.py): the server numbers its
writes and makes the next one only after the probe has taken the previous one, and the probe's clock reads that
number, so `clock.stamps(s)` names the write behind headers, first event, TTFT, first visible content and the end,
exactly, however loaded the machine. test_on_the_real_clock_no_phase_comes_before_the_write_it_names runs every shape
on perf_counter and checks what load cannot change: the TTFT is never before the server's first content write (same
clock), and the phases are in order. How many milliseconds the stamps are off the truth is a figure, not a test:
bench/bench_probe_accuracy.py --shapes prints it for each of these shapes.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from planner.probes.ttft import ProbeTarget, TtftSample, probe_once
from planner.store.probes import sample_row
from tests.support.servers import (
    Script,
    ScriptedServer,
    StartClock,
    Step,
    StepClock,
    anthropic_event,
    chat_chunk,
    completion_chunk,
    probe_stepwise,
    sse,
    usage_chunk,
)

DONE = b"data: [DONE]\n\n"


def probe(script: Script, **kw) -> tuple[TtftSample, StepClock, ScriptedServer]:
    """One sample of `script` from a stepwise server, on the step clock (kw: ProbeTarget fields)."""
    with ScriptedServer(script, stepwise=True) as srv:
        target = ProbeTarget(base_url=srv.url, model="m", prompt_tokens=kw.pop("prompt_tokens", 50), **kw)
        s, clock = asyncio.run(probe_stepwise(srv, target, max_attempts=1))
    return s, clock, srv


def real_probe(url: str, **kw) -> tuple[TtftSample, int]:
    """One sample on the real clock (perf_counter_ns) and its start on that clock (the first clock read)."""
    clock = StartClock()
    target = ProbeTarget(base_url=url, model="m", prompt_tokens=kw.pop("prompt_tokens", 50), **kw)
    sample = asyncio.run(probe_once(target, clock_ns=clock, max_attempts=1))
    return sample, clock.start_ns


# ---- the stream shapes; `content=True` marks each one's first token (reasoning and tool calls count) ----------

ROLE_FIRST = Script(
    steps=[
        Step(sse(chat_chunk({"role": "assistant", "content": ""}))),
        Step(sse(chat_chunk({"content": "Hello"})), content=True),
        Step(sse(chat_chunk({}, finish="stop")) + DONE),
    ]
)
PINGS = Script(
    steps=[
        Step(b": ping\n\n"),
        Step(b": ping - 2025-01-01\n\n"),
        Step(sse(chat_chunk({"content": "x"}), space=False), content=True),
        Step(b"data:[DONE]\n\n"),
    ]
)
_FRAME = sse(chat_chunk({"content": "split"}))
SPLIT_EVENT = Script(
    steps=[Step(_FRAME[: len(_FRAME) // 2]), Step(_FRAME[len(_FRAME) // 2 :], content=True), Step(DONE)]
)
SEVERAL_IN_ONE_WRITE = Script(
    steps=[Step(b"".join(sse(chat_chunk({"content": w})) for w in ("a", "b", "c")) + DONE, content=True)]
)
REASONING_FIRST = Script(
    steps=[
        Step(sse(chat_chunk({"role": "assistant"}))),
        Step(sse(chat_chunk({"reasoning_content": "thinking"})), content=True),
        Step(sse(chat_chunk({"reasoning": "more"}))),
        Step(sse(chat_chunk({"content": "answer"}))),
        Step(DONE),
    ]
)
_TOOL = {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "read_file"}}]}
TOOL_CALL_FIRST = Script(
    steps=[
        Step(sse(chat_chunk({"role": "assistant", "content": None}))),
        Step(sse(chat_chunk(_TOOL)), content=True),
        Step(sse(chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"path":'}}]}))),
        Step(sse(chat_chunk({}, finish="tool_calls")) + DONE),
    ]
)
ANTHROPIC_THINKING_FIRST = Script(
    steps=[
        Step(
            anthropic_event(
                "message_start",
                message={
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "content": [],
                    "model": "m",
                    "usage": {"input_tokens": 40, "cache_read_input_tokens": 960, "output_tokens": 1},
                },
            )
        ),
        Step(anthropic_event("ping")),
        Step(anthropic_event("content_block_start", index=0, content_block={"type": "thinking", "thinking": ""})),
        Step(
            anthropic_event("content_block_delta", index=0, delta={"type": "thinking_delta", "thinking": "hm"}),
            content=True,
        ),
        Step(anthropic_event("content_block_stop", index=0)),
        Step(anthropic_event("content_block_start", index=1, content_block={"type": "text", "text": ""})),
        Step(anthropic_event("content_block_delta", index=1, delta={"type": "text_delta", "text": "Hi"})),
        Step(anthropic_event("content_block_stop", index=1)),
        Step(anthropic_event("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 17})),
        Step(anthropic_event("message_stop")),
    ]
)
LEGACY_COMPLETIONS = Script(
    steps=[Step(sse(completion_chunk(""))), Step(sse(completion_chunk(" hello")), content=True), Step(DONE)]
)
BUFFERED = Script(steps=[Step(b"".join(sse(chat_chunk({"content": f"w{i}"})) for i in range(20)) + DONE, content=True)])
STREAMED = Script(steps=[*(Step(sse(chat_chunk({"content": f"w{i}"})), content=i == 0) for i in range(8)), Step(DONE)])

#: name → (script, protocol): every shape above, for the real-clock test
SHAPES = {
    "role-first": (ROLE_FIRST, "openai-chat"),
    "pings": (PINGS, "openai-chat"),
    "split-event": (SPLIT_EVENT, "openai-chat"),
    "several-in-one-write": (SEVERAL_IN_ONE_WRITE, "openai-chat"),
    "reasoning-first": (REASONING_FIRST, "openai-chat"),
    "tool-call-first": (TOOL_CALL_FIRST, "openai-chat"),
    "anthropic-thinking-first": (ANTHROPIC_THINKING_FIRST, "anthropic"),
    "legacy-completions": (LEGACY_COMPLETIONS, "openai-completions"),
    "buffered": (BUFFERED, "openai-chat"),
    "streamed": (STREAMED, "openai-chat"),
}


def test_role_only_first_chunk_is_the_first_event_not_the_first_token():
    s, clock, _ = probe(ROLE_FIRST)
    assert s.ok and s.error_class is None
    assert clock.stamps(s) == {"headers": "headers", "first_event": 0, "ttft": 1, "first_content": 1, "total": "end"}
    assert s.output_tokens == 1


def test_ping_comments_and_data_without_space_are_handled():
    s, clock, _ = probe(PINGS)
    assert s.ok
    assert clock.stamps(s) == {"headers": "headers", "first_event": 2, "ttft": 2, "first_content": 2, "total": "end"}


def test_json_event_split_across_tcp_writes_is_stamped_when_complete():
    s, clock, _ = probe(SPLIT_EVENT)
    assert s.ok
    assert clock.at(s.first_event_ms) == clock.at(s.ttft_ms) == 1  # not when the first half arrived


def test_several_events_in_one_write():
    s, clock, _ = probe(SEVERAL_IN_ONE_WRITE)
    assert s.ok and s.output_tokens == 3
    assert clock.at(s.ttft_ms) == clock.at(s.first_content_ms) == 0


def test_reasoning_before_content_counts_as_first_token_but_not_visible():
    s, clock, _ = probe(REASONING_FIRST)
    assert s.ok
    assert clock.stamps(s) == {"headers": "headers", "first_event": 0, "ttft": 1, "first_content": 3, "total": "end"}


def test_tool_call_first_is_a_token_with_no_visible_content():
    s, clock, _ = probe(TOOL_CALL_FIRST)
    assert s.ok
    assert clock.stamps(s) == {"headers": "headers", "first_event": 0, "ttft": 1, "first_content": None, "total": "end"}


def test_usage_only_final_chunk_fills_token_counts():
    script = Script(
        steps=[
            Step(sse(chat_chunk({"content": "a"})), content=True),
            Step(sse(chat_chunk({"content": "b"}))),
            Step(sse(chat_chunk({}, finish="length"))),
            Step(sse(usage_chunk(prompt=1203, completion=64, cached=1024))),
            Step(DONE),
        ]
    )
    s, _, _ = probe(script)
    assert s.ok
    assert (s.prompt_tokens, s.output_tokens, s.cached_tokens) == (1203, 64, 1024)


def test_done_without_content_is_a_no_content_failure():
    script = Script(
        steps=[
            Step(sse(chat_chunk({"role": "assistant", "content": ""}))),
            Step(sse(chat_chunk({}, finish="stop"))),
            Step(DONE),
        ]
    )
    s, clock, _ = probe(script)
    assert not s.ok and s.error_class == "no_content"
    assert s.ttft_ms is None and clock.at(s.first_event_ms) == 0


def test_anthropic_event_sequence_with_ping_and_message_delta_usage():
    s, clock, srv = probe(ANTHROPIC_THINKING_FIRST, protocol="anthropic", api_key_env="")
    req = srv.requests[0]
    assert s.ok
    # content_block_start is the first event, the thinking delta the first token, the text delta the first
    # visible content; message_start and ping are none of them
    assert clock.stamps(s) == {"headers": "headers", "first_event": 2, "ttft": 3, "first_content": 6, "total": "end"}
    assert (s.prompt_tokens, s.cached_tokens, s.output_tokens) == (1000, 960, 17)
    assert req.path == "/v1/messages"
    assert req.headers["anthropic-version"] == "2023-06-01"


def test_legacy_completions_text_chunks():
    s, clock, srv = probe(LEGACY_COMPLETIONS, protocol="openai-completions")
    req = srv.requests[0]
    assert s.ok and clock.at(s.ttft_ms) == 1  # the empty text chunk is no token
    assert req.path == "/v1/completions" and "prompt" in req.json()


def test_buffered_stream_is_flagged_but_kept():
    s, clock, _ = probe(BUFFERED)
    assert s.ok and s.buffered
    assert clock.at(s.ttft_ms) == 0 and s.output_tokens == 20


def test_a_streamed_response_is_not_flagged_buffered():
    s, clock, _ = probe(STREAMED)
    assert s.ok and not s.buffered
    assert clock.at(s.ttft_ms) == 0 and s.output_tokens == 8


@pytest.mark.parametrize("shape", SHAPES)
def test_on_the_real_clock_no_phase_comes_before_the_write_it_names(shape):
    """perf_counter_ns on both sides: the client cannot read a write before the server starts it, whatever the
    load; the phases come in order. (How far after: bench/bench_probe_accuracy.py --shapes.)"""
    script, protocol = SHAPES[shape]
    with ScriptedServer(script) as srv:
        s, t0 = real_probe(srv.url, protocol=protocol)
    assert s.ok, s.error_detail
    assert s.ttft_ms >= (srv.first_content_ns[0] - t0) / 1e6
    assert 0 <= s.headers_ms <= s.first_event_ms <= s.ttft_ms <= s.total_ms
    assert s.first_content_ms is None or s.ttft_ms <= s.first_content_ms <= s.total_ms


def test_request_has_nonce_first_identity_encoding_usage_and_original_host():
    script = Script(steps=[Step(sse(chat_chunk({"content": "x"})) + DONE, content=True)])
    with ScriptedServer(script) as srv:
        url = srv.url.replace("127.0.0.1", "localhost")
        real_probe(url, prompt_tokens=300)
        real_probe(url, prompt_tokens=300)
        real_probe(url, prompt_tokens=300, cached=True)
        real_probe(url, prompt_tokens=300, cached=True)
        reqs = srv.requests
    prompts = [r.json()["messages"][0]["content"] for r in reqs]
    assert prompts[0].split()[0] == "probe"
    assert prompts[0].split()[1:5] != prompts[1].split()[1:5]  # the nonce differs from the 2nd word on
    assert prompts[2] == prompts[3]  # --cached repeats the prompt on purpose
    for r in reqs:
        assert r.headers["accept-encoding"] == "identity"
        assert r.headers["host"] == f"localhost:{srv.port}"
        body = r.json()
        assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert 280 <= len(prompts[0].split()) <= 300


def test_default_opens_a_fresh_connection_per_sample():
    script = Script(steps=[Step(sse(chat_chunk({"content": "x"})) + DONE, content=True)])
    with ScriptedServer(script) as srv:
        a, _ = real_probe(srv.url)
        b, _ = real_probe(srv.url)
        assert srv.connections == 2
    assert not a.conn_reused and not b.conn_reused
    assert a.connect_ms is not None and a.remote_ip == "127.0.0.1" and a.dns_ms == 0.0
    assert a.http_version == "HTTP/1.1" and a.status_code == 200


def test_keep_alive_reuses_the_callers_connection_and_says_so():
    import httpx

    script = Script(steps=[Step(sse(chat_chunk({"content": "x"})) + DONE, content=True)])

    async def two(url: str) -> list:
        async with httpx.AsyncClient(trust_env=False) as client:
            t = ProbeTarget(base_url=url, model="m", prompt_tokens=20, keep_alive=True)
            return [await probe_once(t, client=client), await probe_once(t, client=client)]

    with ScriptedServer(script) as srv:
        first, second = asyncio.run(two(srv.url))
        assert srv.connections == 1
    assert first.ok and second.ok
    assert not first.conn_reused and second.conn_reused
    assert second.connect_ms is None


def test_sample_round_trips_to_a_store_row():
    script = Script(steps=[Step(sse(chat_chunk({"content": "x"})) + DONE, content=True)])
    with ScriptedServer(script) as srv:
        s, _ = real_probe(srv.url)
    row = sample_row(s, endpoint_id=7, vantage="ci", kind="manual", scheduled_at_ms=s.started_at_ms, idle_gap_ms=1500.0)
    assert row.ttft_ms == s.ttft_ms and row.endpoint_id == 7 and row.idle_gap_ms == 1500.0
    assert json.loads(json.dumps(s.to_dict()))["ok"] is True


def test_https_resolves_itself_then_connects_to_the_ip_with_host_and_sni(tmp_path):
    import shutil
    import ssl

    import httpx
    import pytest

    from tests.support.servers import self_signed_cert

    if not shutil.which("openssl"):
        pytest.skip("openssl CLI not installed")
    cert, key = self_signed_cert(tmp_path, "localhost")
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert, key)
    script = Script(steps=[Step(sse(chat_chunk({"content": "x"})) + DONE, content=True)])
    with ScriptedServer(script, ssl_context=server_ctx) as srv:
        url = f"https://localhost:{srv.port}/v1"
        untrusted, _ = real_probe(url)  # self-signed: the default trust store refuses it

        async def trusted() -> TtftSample:
            async with httpx.AsyncClient(verify=ssl.create_default_context(cafile=cert), trust_env=False) as client:
                return await probe_once(ProbeTarget(base_url=url, model="m", prompt_tokens=20), client=client)

        s = asyncio.run(trusted())
        req = srv.requests[-1]
    assert not untrusted.ok and untrusted.error_class == "tls" and "certificate" in untrusted.error_detail.lower()
    assert s.ok, s.error_detail
    assert s.dns_ms is not None and s.dns_ms > 0  # "localhost" was resolved by the probe, timed
    assert s.remote_ip == "127.0.0.1"
    assert s.tls_ms is not None and s.tls_ms > 0 and s.connect_ms is not None
    assert s.headers_ms >= s.dns_ms + s.connect_ms + s.tls_ms
    assert req.headers["host"] == f"localhost:{srv.port}"
    assert srv.sni_names[-1] == "localhost"  # SNI carries the name even though we connected to the IP
