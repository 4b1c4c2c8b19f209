"""probe_once on the cloud protocols (OpenAI Responses, Azure OpenAI, Gemini/Vertex, Bedrock ConverseStream)
against a local server speaking each exact wire format, traps included.

Which write each phase is stamped at is checked in stepwise mode (tests/support/servers.py: the server writes the
next step only once the probe has taken the previous one, and the probe's clock reads the server's write number),
so the answers are exact on any machine load. On the real clock, test_on_the_real_clock_the_ttft_is_never_before_
the_first_token_write checks what load cannot change; the error in milliseconds against the server's clock is a
figure that bench/bench_protocol_accuracy.py prints.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json

import pytest

from planner.probes.ttft import ProbeTarget, TtftSample, probe_once
from planner.store.probes import sample_row
from tests.support.cloud_streams import (
    bedrock_event,
    bedrock_exception,
    eventstream_frame,
    gemini_chunk,
    responses_event,
    verify_sigv4,
)
from tests.support.servers import (
    RecordingSleep,
    Script,
    ScriptedServer,
    StartClock,
    Step,
    StepClock,
    chat_chunk,
    probe_stepwise,
    sse,
    usage_chunk,
)

EVENTSTREAM = {"Content-Type": "application/vnd.amazon.eventstream"}


def probe(srv: ScriptedServer, base_url: str, protocol: str, model: str = "m", **kw) -> tuple[TtftSample, StepClock]:
    """One sample from the stepwise server `srv`, on its step clock; retry waits are recorded, not waited out."""
    attempts, sleep = kw.pop("max_attempts", 1), kw.pop("sleep", RecordingSleep())
    target = ProbeTarget(base_url=base_url, model=model, protocol=protocol, prompt_tokens=40, **kw)
    return asyncio.run(probe_stepwise(srv, target, max_attempts=attempts, sleep=sleep))


# ---- OpenAI Responses -------------------------------------------------------------------------------------------


def _created() -> bytes:
    return responses_event("response.created", response={"id": "resp_1", "status": "in_progress"}) + responses_event(
        "response.in_progress", response={"id": "resp_1", "status": "in_progress"}
    )


def _completed(inp: int, out: int, cached: int) -> bytes:
    usage = {"input_tokens": inp, "output_tokens": out, "input_tokens_details": {"cached_tokens": cached}}
    return responses_event("response.completed", response={"id": "resp_1", "status": "completed", "usage": usage})


def _responses_stream() -> Script:
    return Script(
        steps=[
            Step(_created()),
            Step(responses_event("response.output_item.added", output_index=0, item={"type": "message"})),
            Step(responses_event("response.output_text.delta", output_index=0, delta="Hello"), content=True),
            Step(responses_event("response.output_text.delta", output_index=0, delta=" there")),
            Step(_completed(41, 2, 32)),
        ]
    )


def test_responses_created_and_in_progress_are_not_tokens_and_usage_comes_at_the_end():
    with ScriptedServer(_responses_stream(), stepwise=True) as srv:
        s, clock = probe(srv, srv.url, "openai-responses", max_tokens=4)
    assert s.ok, s.error_detail
    # created / in_progress are no event; output_item.added is the first event, not a token
    assert clock.stamps(s) == {"headers": "headers", "first_event": 1, "ttft": 2, "first_content": 2, "total": "end"}
    assert (s.prompt_tokens, s.output_tokens, s.cached_tokens) == (41, 2, 32)
    req = srv.requests[0]
    assert req.path == "/v1/responses"
    body = req.json()
    assert body["stream"] is True and body["store"] is False and body["model"] == "m"
    assert body["max_output_tokens"] == 16  # the API's minimum, although max_tokens=4
    assert isinstance(body["input"], str) and len(body["input"]) > 50


@pytest.mark.parametrize("kind", ["response.reasoning_summary_text.delta", "response.function_call_arguments.delta"])
def test_responses_reasoning_or_tool_call_first_is_the_first_token_but_not_visible(kind):
    script = Script(
        steps=[
            Step(_created()),
            Step(responses_event(kind, output_index=0, delta='{"ci'), content=True),
            Step(responses_event("response.output_text.delta", output_index=1, delta="Hi")),
            Step(_completed(10, 3, 0)),
        ]
    )
    with ScriptedServer(script, stepwise=True) as srv:
        s, clock = probe(srv, srv.url, "openai-responses")
    assert s.ok
    assert clock.stamps(s) == {"headers": "headers", "first_event": 1, "ttft": 1, "first_content": 2, "total": "end"}


def test_responses_stream_without_a_delta_is_no_content_and_an_error_event_is_rate_limited():
    with ScriptedServer(Script(steps=[Step(_created()), Step(_completed(10, 0, 0))]), stepwise=True) as srv:
        s, _ = probe(srv, srv.url, "openai-responses")
    assert not s.ok and s.error_class == "no_content"
    err = responses_event("error", code="rate_limit_exceeded", message="Rate limit reached for requests")
    with ScriptedServer(Script(steps=[Step(_created()), Step(err)]), stepwise=True) as srv:
        s, _ = probe(srv, srv.url, "openai-responses")
    assert s.error_class == "rate_limited" and "Rate limit reached" in s.error_detail


# ---- Azure OpenAI -----------------------------------------------------------------------------------------------

AZURE_FILTER_CHUNK = {
    "id": "",
    "object": "",
    "created": 0,
    "model": "",
    "choices": [],
    "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {}}],
}


def _azure_stream() -> Script:
    return Script(
        steps=[
            Step(sse(AZURE_FILTER_CHUNK)),  # metadata-only first event
            Step(sse(chat_chunk({"role": "assistant", "content": ""}))),  # role-only first delta
            Step(sse(chat_chunk({"content": "Hi"})), content=True),
            Step(sse(chat_chunk({}, finish="stop")) + sse(usage_chunk(30, 1)) + b"data: [DONE]\n\n"),
        ]
    )


def test_azure_deployment_url_api_version_and_api_key_header(monkeypatch):
    monkeypatch.setenv("AZ_KEY_T", "0123456789abcdef0123456789abcdef")
    with ScriptedServer(_azure_stream(), stepwise=True) as srv:
        base = f"http://127.0.0.1:{srv.port}/openai/deployments/gpt-4o-prod"
        s, clock = probe(srv, base, "azure-openai", api_key_env="AZ_KEY_T")
    assert s.ok, s.error_detail
    # the role-only delta is the first event, not the filter chunk
    assert clock.stamps(s) == {"headers": "headers", "first_event": 1, "ttft": 2, "first_content": 2, "total": "end"}
    assert (s.prompt_tokens, s.output_tokens) == (30, 1)
    req = srv.requests[0]
    assert req.path == "/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21"
    assert req.headers["api-key"] == "0123456789abcdef0123456789abcdef" and "authorization" not in req.headers


def test_azure_entra_token_is_a_bearer_and_base_api_version_is_kept(monkeypatch):
    token = "eyJhbGciOiJSUzI1NiJ9.eyJhdWQiOiJjb2duaXRpdmUifQ.c2lnbmF0dXJl"
    monkeypatch.setenv("AZ_TOKEN_T", token)
    with ScriptedServer(_azure_stream(), stepwise=True) as srv:
        base = f"http://127.0.0.1:{srv.port}/openai/deployments/d1?api-version=2025-04-01-preview"
        s, _ = probe(srv, base, "azure-openai", api_key_env="AZ_TOKEN_T")
    assert s.ok
    req = srv.requests[0]
    assert req.path == "/openai/deployments/d1/chat/completions?api-version=2025-04-01-preview"
    assert req.headers["authorization"] == f"Bearer {token}" and "api-key" not in req.headers


def test_azure_429_waits_retry_after_ms_then_succeeds():
    busy = Script(
        status=429,
        reason="Too Many Requests",
        chunked=False,
        headers={"Content-Type": "application/json", "retry-after-ms": "250", "retry-after": "1"},
        steps=[Step(json.dumps({"error": {"code": "429", "message": "Requests are throttled"}}).encode())],
    )
    sleep = RecordingSleep()
    with ScriptedServer([busy, _azure_stream()], stepwise=True) as srv:
        s, clock = probe(srv, f"http://127.0.0.1:{srv.port}/openai/v1", "azure-openai", max_attempts=3, sleep=sleep)
    assert s.ok and s.attempts == 2
    assert sleep.waits == [0.25] and s.retry_wait_ms == pytest.approx(250.0)  # the ms header wins over the 1 s one
    assert srv.requests[1].path == "/openai/v1/chat/completions"  # the v1 surface takes no api-version
    assert clock.unit(s.ttft_ms) == (1, 2)  # the retry's first token, on a clock that started before the 429


# ---- Gemini / Vertex --------------------------------------------------------------------------------------------

GEMINI_USAGE = {
    "promptTokenCount": 44,
    "candidatesTokenCount": 3,
    "thoughtsTokenCount": 5,
    "cachedContentTokenCount": 32,
    "totalTokenCount": 52,
}


def _gemini_stream() -> Script:
    return Script(
        steps=[
            Step(gemini_chunk(None, usage={"promptTokenCount": 44})),  # metadata only
            Step(gemini_chunk([])),  # role-only candidate, no parts
            Step(gemini_chunk([{"text": "Let me think", "thought": True}]), content=True),
            Step(gemini_chunk([{"text": "Hello"}])),
            Step(gemini_chunk([{"text": "!"}], finish="STOP", usage=GEMINI_USAGE)),
        ]
    )


def test_gemini_metadata_first_thought_then_text_with_usage_at_the_end(monkeypatch):
    monkeypatch.setenv("GEMINI_KEY_T", "AIza-test-key")
    with ScriptedServer(_gemini_stream(), stepwise=True) as srv:
        s, clock = probe(
            srv, f"http://127.0.0.1:{srv.port}/v1beta", "gemini", model="gemini-2.5-flash", api_key_env="GEMINI_KEY_T"
        )
    assert s.ok, s.error_detail
    # neither the metadata chunk nor the empty candidate was an event; the thought is a token but not visible
    assert clock.stamps(s) == {"headers": "headers", "first_event": 2, "ttft": 2, "first_content": 3, "total": "end"}
    assert (s.prompt_tokens, s.output_tokens, s.cached_tokens) == (44, 8, 32)
    req = srv.requests[0]
    assert req.path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert req.headers["x-goog-api-key"] == "AIza-test-key" and "key=" not in req.path
    body = req.json()
    assert body["generationConfig"]["maxOutputTokens"] == 64 and body["contents"][0]["parts"][0]["text"]


def test_gemini_function_call_first_is_a_token():
    script = Script(
        steps=[
            Step(gemini_chunk([{"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}}]), content=True),
            Step(gemini_chunk([], finish="STOP", usage=GEMINI_USAGE)),
        ]
    )
    with ScriptedServer(script, stepwise=True) as srv:
        s, clock = probe(srv, f"http://127.0.0.1:{srv.port}/v1beta", "gemini")
    assert s.ok
    assert clock.stamps(s) == {"headers": "headers", "first_event": 0, "ttft": 0, "first_content": None, "total": "end"}


def test_gemini_429_resource_exhausted_waits_its_retry_delay_then_succeeds():
    err = {
        "error": {
            "code": 429,
            "message": "Resource has been exhausted (e.g. check quota).",
            "status": "RESOURCE_EXHAUSTED",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.2s"}],
        }
    }
    busy = Script(
        status=429,
        reason="Too Many Requests",
        chunked=False,
        headers={"Content-Type": "application/json"},
        steps=[Step(json.dumps(err).encode())],
    )
    ok = Script(steps=[Step(gemini_chunk([{"text": "Hi"}], finish="STOP", usage=GEMINI_USAGE), content=True)])
    sleep = RecordingSleep()
    with ScriptedServer([busy, ok], stepwise=True) as srv:
        s, clock = probe(srv, f"http://127.0.0.1:{srv.port}/v1beta", "gemini", max_attempts=3, sleep=sleep)
    assert s.ok and s.attempts == 2 and s.retry_wait_ms == pytest.approx(200.0) and sleep.waits == [0.2]
    assert clock.unit(s.ttft_ms) == (1, 0)


def test_vertex_sends_the_token_variable_as_a_bearer(monkeypatch):
    monkeypatch.setenv("VERTEX_TOKEN_T", "ya29.test-token")
    base = "/v1/projects/p1/locations/europe-west4/publishers/google"
    with ScriptedServer(Script(steps=[Step(gemini_chunk([{"text": "Hi"}]), content=True)]), stepwise=True) as srv:
        s, _ = probe(
            srv, f"http://127.0.0.1:{srv.port}{base}", "vertex", model="gemini-2.5-pro", api_key_env="VERTEX_TOKEN_T"
        )
    assert s.ok
    assert srv.requests[0].path == base + "/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    assert srv.requests[0].headers["authorization"] == "Bearer ya29.test-token"


def test_vertex_without_a_token_or_default_credentials_is_an_auth_failure_and_sends_nothing(monkeypatch):
    if importlib.util.find_spec("google") and importlib.util.find_spec("google.auth"):
        pytest.skip("google-auth installed: ADC might find real credentials")
    with ScriptedServer(Script(steps=[Step(gemini_chunk([{"text": "Hi"}]))]), stepwise=True) as srv:
        s, _ = probe(srv, f"http://127.0.0.1:{srv.port}/v1", "vertex")
    assert not s.ok and s.error_class == "auth" and "no Google credentials" in s.error_detail
    assert srv.requests == []


# ---- AWS Bedrock ConverseStream ---------------------------------------------------------------------------------

AKID, SECRET = "AKIDTESTPROBE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYTESTKEY"
BEDROCK_MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"


@pytest.fixture
def aws_env(monkeypatch, tmp_path):
    """The AWS chain's environment provider with a test key; no shared files, no instance metadata."""
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", AKID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_REGION", "eu-central-1")
    return monkeypatch


def _converse(first: bytes) -> Script:
    return Script(
        headers=EVENTSTREAM,
        steps=[
            Step(bedrock_event("messageStart", role="assistant")),  # role only: not the first event
            Step(first, content=True),
            Step(bedrock_event("contentBlockDelta", contentBlockIndex=0, delta={"text": " world"})),
            Step(bedrock_event("contentBlockStop", contentBlockIndex=0)),
            Step(bedrock_event("messageStop", stopReason="end_turn")),
            Step(
                bedrock_event(
                    "metadata",
                    usage={"inputTokens": 12, "outputTokens": 2, "totalTokens": 46, "cacheReadInputTokens": 32},
                    metrics={"latencyMs": 187},
                )
            ),
        ],
    )


BEDROCK_TEXT = bedrock_event("contentBlockDelta", contentBlockIndex=0, delta={"text": "Hello"})


def test_bedrock_sigv4_verified_server_side_message_start_is_not_a_token_and_metadata_is_kept(aws_env):
    with ScriptedServer(_converse(BEDROCK_TEXT), stepwise=True) as srv:
        s, clock = probe(srv, f"http://127.0.0.1:{srv.port}", "bedrock", model=BEDROCK_MODEL)
    assert s.ok, s.error_detail
    # messageStart counted for nothing: the first text delta is first event, first token and first content
    assert clock.stamps(s) == {"headers": "headers", "first_event": 1, "ttft": 1, "first_content": 1, "total": "end"}
    assert (s.prompt_tokens, s.output_tokens, s.cached_tokens) == (44, 2, 32)
    assert s.server_latency_ms == 187.0
    req = srv.requests[0]
    assert req.path == "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse-stream"
    assert verify_sigv4(req, AKID, SECRET, "eu-central-1")
    assert not verify_sigv4(req, AKID, SECRET + "x", "eu-central-1")
    assert req.json()["inferenceConfig"]["maxTokens"] == 64
    assert sample_row(s, 1, "", "manual", 0).ttft_ms == s.ttft_ms  # the extra figure does not break the store row


@pytest.mark.parametrize(
    "first",
    [
        bedrock_event("contentBlockDelta", contentBlockIndex=0, delta={"reasoningContent": {"text": "Hmm"}}),
        bedrock_event("contentBlockDelta", contentBlockIndex=0, delta={"toolUse": {"input": '{"city"'}}),
    ],
    ids=["reasoning", "tool-input"],
)
def test_bedrock_reasoning_or_tool_input_first_is_the_token_but_not_visible(aws_env, first):
    with ScriptedServer(_converse(first), stepwise=True) as srv:
        s, clock = probe(srv, f"http://127.0.0.1:{srv.port}", "bedrock", model=BEDROCK_MODEL)
    assert s.ok
    assert clock.stamps(s) == {"headers": "headers", "first_event": 1, "ttft": 1, "first_content": 2, "total": "end"}


def test_bedrock_throttling_in_stream_and_as_429_is_retried(aws_env):
    in_stream = Script(
        headers=EVENTSTREAM,
        steps=[
            Step(bedrock_event("messageStart", role="assistant")),
            Step(bedrock_exception("throttlingException", "Too many requests, please wait before trying again.")),
        ],
    )
    as_429 = Script(
        status=429,
        reason="Too Many Requests",
        chunked=False,
        headers={"Content-Type": "application/json", "x-amzn-ErrorType": "ThrottlingException"},
        steps=[Step(b'{"message":"Too many requests, please wait before trying again."}')],
    )
    first = bedrock_event("contentBlockDelta", contentBlockIndex=0, delta={"text": "Hi"})
    sleep = RecordingSleep()
    with ScriptedServer([in_stream, as_429, _converse(first)], stepwise=True) as srv:
        base = f"http://127.0.0.1:{srv.port}"
        s, clock = probe(srv, base, "bedrock", model=BEDROCK_MODEL, max_attempts=3, sleep=sleep)
    assert s.ok and s.attempts == 3
    assert sleep.waits == [0.5, 1.0] and s.retry_wait_ms == pytest.approx(500.0 + 1000.0)  # no Retry-After: backoff
    assert all(verify_sigv4(r, AKID, SECRET, "eu-central-1") for r in srv.requests)
    assert clock.unit(s.ttft_ms) == (2, 1)
    with ScriptedServer(in_stream, stepwise=True) as srv:
        s, _ = probe(srv, f"http://127.0.0.1:{srv.port}", "bedrock", model=BEDROCK_MODEL)
    assert s.error_class == "rate_limited" and "throttlingException" in s.error_detail


def test_bedrock_api_key_is_a_bearer_and_no_credentials_send_nothing(aws_env):
    aws_env.setenv("BEDROCK_KEY_T", "ABSKbedrock-test-key")
    first = bedrock_event("contentBlockDelta", contentBlockIndex=0, delta={"text": "Hi"})
    with ScriptedServer(_converse(first), stepwise=True) as srv:
        s, _ = probe(srv, f"http://127.0.0.1:{srv.port}", "bedrock", model=BEDROCK_MODEL, api_key_env="BEDROCK_KEY_T")
    assert s.ok
    assert srv.requests[0].headers["authorization"] == "Bearer ABSKbedrock-test-key"
    assert "x-amz-date" not in srv.requests[0].headers
    aws_env.delenv("AWS_ACCESS_KEY_ID")
    aws_env.delenv("AWS_SECRET_ACCESS_KEY")
    with ScriptedServer(_converse(first), stepwise=True) as srv:
        s, _ = probe(srv, f"http://127.0.0.1:{srv.port}", "bedrock", model=BEDROCK_MODEL)
    assert not s.ok and s.error_class == "auth" and "no AWS credentials" in s.error_detail
    assert srv.requests == []


def test_bedrock_corrupt_frame_and_wrong_content_type_are_reported(aws_env):
    frame = bytearray(bedrock_event("contentBlockDelta", contentBlockIndex=0, delta={"text": "Hi"}))
    frame[-1] ^= 0xFF  # message CRC no longer matches
    with ScriptedServer(Script(headers=EVENTSTREAM, steps=[Step(bytes(frame))]), stepwise=True) as srv:
        s, _ = probe(srv, f"http://127.0.0.1:{srv.port}", "bedrock", model=BEDROCK_MODEL)
    assert s.error_class == "bad_frame" and "corrupt event-stream frame" in s.error_detail
    cut = bedrock_event("contentBlockDelta", contentBlockIndex=0, delta={"text": "Hi"})[:-7]  # ends inside a frame
    with ScriptedServer(Script(headers=EVENTSTREAM, steps=[Step(cut)]), stepwise=True) as srv:
        s, _ = probe(srv, f"http://127.0.0.1:{srv.port}", "bedrock", model=BEDROCK_MODEL)
    assert s.error_class == "bad_frame" and "ended inside an event-stream frame" in s.error_detail, s.error_detail
    with ScriptedServer(Script(steps=[Step(sse({"x": 1}))]), stepwise=True) as srv:
        s, _ = probe(srv, f"http://127.0.0.1:{srv.port}", "bedrock", model=BEDROCK_MODEL)
    assert s.error_class == "not_sse"
    assert eventstream_frame({":event-type": "x"}, b"")[:4] == (4 + 4 + 4 + (1 + 11 + 1 + 2 + 1) + 4).to_bytes(4, "big")


# ---- every protocol on the real clock ---------------------------------------------------------------------------

#: protocol → (script, path under the server, model)
REAL_CLOCK = {
    "openai-responses": (_responses_stream, "/v1", "m"),
    "azure-openai": (_azure_stream, "/openai/deployments/d", "m"),
    "gemini": (_gemini_stream, "/v1beta", "gemini-2.5-flash"),
    "bedrock": (lambda: _converse(BEDROCK_TEXT), "", BEDROCK_MODEL),
}


@pytest.mark.parametrize("protocol", REAL_CLOCK)
def test_on_the_real_clock_the_ttft_is_never_before_the_first_token_write(aws_env, protocol):
    """perf_counter_ns on both sides: the client cannot read a write before the server starts it, whatever the
    load; the phases come in order. (How far after: bench/bench_protocol_accuracy.py.)"""
    script, path, model = REAL_CLOCK[protocol]
    clock = StartClock()
    with ScriptedServer(script()) as srv:
        target = ProbeTarget(base_url=f"http://127.0.0.1:{srv.port}{path}", model=model, protocol=protocol)
        s = asyncio.run(probe_once(target, clock_ns=clock, max_attempts=1))
    assert s.ok, s.error_detail
    assert s.ttft_ms >= (srv.first_content_ns[0] - clock.start_ns) / 1e6
    assert 0 <= s.headers_ms <= s.first_event_ms <= s.ttft_ms <= s.first_content_ms <= s.total_ms


@pytest.mark.parametrize(
    ("host", "region"),
    [
        ("bedrock-runtime.eu-central-1.amazonaws.com", "eu-central-1"),
        ("bedrock-runtime-fips.us-east-1.amazonaws.com", "us-east-1"),
        ("vpce-0a1b2c3d4e5f-abcdefgh.bedrock-runtime.ap-southeast-2.vpce.amazonaws.com", "ap-southeast-2"),
    ],
)
def test_the_signing_region_is_read_from_every_bedrock_host_form(host, region, monkeypatch):
    from planner.probes.bedrock import signing_region

    monkeypatch.setenv("AWS_REGION", "us-west-2")  # the chain's region must not win over the host's own
    assert signing_region(f"https://{host}") == region
