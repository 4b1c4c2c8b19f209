"""probe_once on every stream shape real servers send, against a local scripted server (no mocks).

Each server step is one TCP write after a set delay; the server stamps the
first content write with perf_counter_ns, so the probe's TTFT is checked
against ground truth, not against itself.
"""

from __future__ import annotations

import asyncio
import json

from planner.probes.ttft import ProbeTarget, TtftSample, probe_once
from planner.store.probes import sample_row
from tests.support.servers import (
    Script,
    ScriptedServer,
    StartClock,
    Step,
    anthropic_event,
    chat_chunk,
    completion_chunk,
    sse,
    usage_chunk,
)

GAP_S = 0.15  # long enough that phase order never depends on machine load
DONE = b"data: [DONE]\n\n"


def probe(url: str, **kw) -> tuple[TtftSample, int]:
    """One sample and its start on the perf_counter_ns clock (the first clock read)."""
    clock = StartClock()
    target = ProbeTarget(base_url=url, model="m", prompt_tokens=kw.pop("prompt_tokens", 50), **kw)
    sample = asyncio.run(probe_once(target, clock_ns=clock, max_attempts=1))
    return sample, clock.start_ns


def truth_ms(server: ScriptedServer, t0: int, i: int = 0) -> float:
    return (server.first_content_ns[i] - t0) / 1e6


def test_role_only_first_chunk_is_the_first_event_not_the_first_token():
    script = Script(
        steps=[
            Step(sse(chat_chunk({"role": "assistant", "content": ""}))),
            Step(sse(chat_chunk({"content": "Hello"})), delay_s=GAP_S, content=True),
            Step(sse(chat_chunk({}, finish="stop")) + DONE),
        ]
    )
    with ScriptedServer(script) as srv:
        s, t0 = probe(srv.url)
    assert s.ok and s.error_class is None
    assert s.first_event_ms < s.ttft_ms - GAP_S * 1000 * 0.5
    assert s.ttft_ms >= GAP_S * 1000
    assert abs(s.ttft_ms - truth_ms(srv, t0)) < 20
    assert s.first_content_ms == s.ttft_ms
    assert s.headers_ms <= s.first_event_ms <= s.ttft_ms <= s.total_ms
    assert s.output_tokens == 1


def test_ping_comments_and_data_without_space_are_handled():
    script = Script(
        steps=[
            Step(b": ping\n\n"),
            Step(b": ping - 2025-01-01\n\n", delay_s=0.05),
            Step(sse(chat_chunk({"content": "x"}), space=False), delay_s=GAP_S, content=True),
            Step(b"data:[DONE]\n\n"),
        ]
    )
    with ScriptedServer(script) as srv:
        s, t0 = probe(srv.url)
    assert s.ok
    assert s.ttft_ms >= GAP_S * 1000
    assert abs(s.ttft_ms - truth_ms(srv, t0)) < 20


def test_json_event_split_across_tcp_writes_is_stamped_when_complete():
    frame = sse(chat_chunk({"content": "split"}))
    cut = len(frame) // 2
    script = Script(steps=[Step(frame[:cut]), Step(frame[cut:], delay_s=GAP_S, content=True), Step(DONE)])
    with ScriptedServer(script) as srv:
        s, t0 = probe(srv.url)
    assert s.ok
    assert s.ttft_ms >= GAP_S * 1000  # not when the first half arrived
    assert abs(s.ttft_ms - truth_ms(srv, t0)) < 20


def test_several_events_in_one_write():
    frames = b"".join(sse(chat_chunk({"content": w})) for w in ("a", "b", "c")) + DONE
    with ScriptedServer(Script(steps=[Step(frames, delay_s=0.02, content=True)])) as srv:
        s, _ = probe(srv.url)
    assert s.ok and s.output_tokens == 3
    assert s.ttft_ms == s.first_content_ms


def test_reasoning_before_content_counts_as_first_token_but_not_visible():
    script = Script(
        steps=[
            Step(sse(chat_chunk({"role": "assistant"}))),
            Step(sse(chat_chunk({"reasoning_content": "thinking"})), delay_s=0.05, content=True),
            Step(sse(chat_chunk({"reasoning": "more"})), delay_s=0.01),
            Step(sse(chat_chunk({"content": "answer"})), delay_s=GAP_S),
            Step(DONE),
        ]
    )
    with ScriptedServer(script) as srv:
        s, t0 = probe(srv.url)
    assert s.ok
    assert abs(s.ttft_ms - truth_ms(srv, t0)) < 20
    assert s.first_content_ms - s.ttft_ms >= GAP_S * 1000 * 0.9


def test_tool_call_first_is_a_token_with_no_visible_content():
    tool = {
        "tool_calls": [
            {"index": 0, "id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": ""}}
        ]
    }
    script = Script(
        steps=[
            Step(sse(chat_chunk({"role": "assistant", "content": None}))),
            Step(sse(chat_chunk(tool)), delay_s=GAP_S, content=True),
            Step(sse(chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"path":'}}]}))),
            Step(sse(chat_chunk({}, finish="tool_calls")) + DONE),
        ]
    )
    with ScriptedServer(script) as srv:
        s, t0 = probe(srv.url)
    assert s.ok
    assert s.ttft_ms >= GAP_S * 1000
    assert s.first_content_ms is None


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
    with ScriptedServer(script) as srv:
        s, _ = probe(srv.url)
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
    with ScriptedServer(script) as srv:
        s, _ = probe(srv.url)
    assert not s.ok and s.error_class == "no_content"
    assert s.ttft_ms is None and s.first_event_ms is not None


def test_anthropic_event_sequence_with_ping_and_message_delta_usage():
    script = Script(
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
            Step(
                anthropic_event("content_block_start", index=0, content_block={"type": "thinking", "thinking": ""}),
                delay_s=0.05,
            ),
            Step(
                anthropic_event("content_block_delta", index=0, delta={"type": "thinking_delta", "thinking": "hm"}),
                delay_s=GAP_S,
                content=True,
            ),
            Step(anthropic_event("content_block_stop", index=0)),
            Step(anthropic_event("content_block_start", index=1, content_block={"type": "text", "text": ""})),
            Step(
                anthropic_event("content_block_delta", index=1, delta={"type": "text_delta", "text": "Hi"}),
                delay_s=GAP_S,
            ),
            Step(anthropic_event("content_block_stop", index=1)),
            Step(anthropic_event("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 17})),
            Step(anthropic_event("message_stop")),
        ]
    )
    with ScriptedServer(script) as srv:
        s, t0 = probe(srv.url, protocol="anthropic", api_key_env="")
        req = srv.requests[0]
    assert s.ok
    assert s.first_event_ms < s.ttft_ms  # content_block_start came first
    assert abs(s.ttft_ms - truth_ms(srv, t0)) < 20
    assert s.first_content_ms - s.ttft_ms >= GAP_S * 1000 * 0.9  # thinking is not visible text
    assert (s.prompt_tokens, s.cached_tokens, s.output_tokens) == (1000, 960, 17)
    assert req.path == "/v1/messages"
    assert req.headers["anthropic-version"] == "2023-06-01"


def test_legacy_completions_text_chunks():
    script = Script(
        steps=[
            Step(sse(completion_chunk("")), delay_s=0.01),
            Step(sse(completion_chunk(" hello")), delay_s=GAP_S, content=True),
            Step(DONE),
        ]
    )
    with ScriptedServer(script) as srv:
        s, t0 = probe(srv.url, protocol="openai-completions")
        req = srv.requests[0]
    assert s.ok and s.ttft_ms >= GAP_S * 1000
    assert req.path == "/v1/completions" and "prompt" in req.json()


def test_buffered_stream_is_flagged_but_kept():
    frames = b"".join(sse(chat_chunk({"content": f"w{i}"})) for i in range(20)) + DONE
    with ScriptedServer(Script(steps=[Step(frames, delay_s=GAP_S, content=True)])) as srv:
        s, _ = probe(srv.url)
    assert s.ok and s.buffered
    assert s.ttft_ms >= GAP_S * 1000


def test_a_streamed_response_is_not_flagged_buffered():
    steps = [Step(sse(chat_chunk({"content": f"w{i}"})), delay_s=0.01, content=i == 0) for i in range(8)]
    with ScriptedServer(Script(steps=[*steps, Step(DONE)])) as srv:
        s, _ = probe(srv.url)
    assert s.ok and not s.buffered


def test_request_has_nonce_first_identity_encoding_usage_and_original_host():
    script = Script(steps=[Step(sse(chat_chunk({"content": "x"})) + DONE, content=True)])
    with ScriptedServer(script) as srv:
        url = srv.url.replace("127.0.0.1", "localhost")
        probe(url, prompt_tokens=300)
        probe(url, prompt_tokens=300)
        probe(url, prompt_tokens=300, cached=True)
        probe(url, prompt_tokens=300, cached=True)
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
        a, _ = probe(srv.url)
        b, _ = probe(srv.url)
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
        s, _ = probe(srv.url)
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
        untrusted, _ = probe(url)  # self-signed: the default trust store refuses it

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
