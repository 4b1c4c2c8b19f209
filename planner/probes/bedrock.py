"""AWS Bedrock ConverseStream: `POST {base}/model/{modelId}/converse-stream`, binary event-stream frames.

base_url is `https://bedrock-runtime.{region}.amazonaws.com`. Authentication, in order:
a Bedrock API key in the variable api_key_env names (e.g. AWS_BEARER_TOKEN_BEDROCK; sent as
`Authorization: Bearer`), else SigV4 with botocore's signer and the standard AWS credential chain
(environment, AWS_PROFILE / shared files, SSO, container and instance roles), resolved before the
sample's clock starts. The signing region is the URL's, else the chain's (AWS_REGION, AWS_DEFAULT_REGION
or the profile's).

The response (`application/vnd.amazon.eventstream`) is decoded with botocore's EventStreamBuffer.
What counts: `messageStart` (role only) is not the first event; `contentBlockStart` is the first event
(a tool call's start); `contentBlockDelta` with text, reasoning or tool input is the first token
(visible for text). `metadata` carries usage and the server's own `metrics.latencyMs`, recorded beside
ours as server_latency_ms. An exception frame (`throttlingException`, `serviceUnavailableException`, …)
is a fault of the matching retryable class.
"""

from __future__ import annotations

import importlib
import json
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

from planner.probes.errors import MissingApiKey, ProbeFault
from planner.probes.events import EventInfo

if TYPE_CHECKING:  # botocore is optional (the bedrock extra) and ships no types: these read as Any
    from botocore.eventstream import EventStreamMessage
    from botocore.session import Session as BotocoreSession

__all__ = [
    "CONTENT_TYPE",
    "EventStreamDecoder",
    "MissingAwsCredentials",
    "build_body",
    "interpret_message",
    "preload",
    "request_url",
    "signing_region",
    "sigv4_signer",
]

CONTENT_TYPE = "application/vnd.amazon.eventstream"
SERVICE = "bedrock"
# bedrock-runtime.{region}.amazonaws.com, its FIPS and China forms, and an interface VPC endpoint's own name
# (vpce-….bedrock-runtime.{region}.vpce.amazonaws.com): the region to sign for is in every one of them
_HOST_REGION = re.compile(
    r"^(?:vpce-[a-z0-9-]+\.)?bedrock-runtime(?:-fips)?\.([a-z0-9-]+)\.(?:vpce\.)?amazonaws\.com(?:\.cn)?$"
)
_RETRYABLE = {
    "throttlingException": "rate_limited",
    "serviceUnavailableException": "server_error",
    "internalServerException": "server_error",
    "modelStreamErrorException": "server_error",
}


class MissingAwsCredentials(MissingApiKey):
    """The AWS credential chain found nothing (and no Bedrock API key variable is set)."""

    def __init__(self, why: str) -> None:
        self.env_name = ""
        Exception.__init__(
            self,
            f"no AWS credentials: {why} (set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or "
            "AWS_PROFILE, or name a Bedrock API key variable)",
        )


def preload() -> None:
    """Import botocore's event-stream decoder and signer (tens of ms) before a sample's clock starts."""
    for name in ("botocore.auth", "botocore.eventstream"):
        importlib.import_module(name)


def request_url(base_url: str, model: str) -> str:
    """The ConverseStream URL; the model id (or inference-profile ARN) is percent-encoded into the path."""
    return f"{base_url.rstrip('/')}/model/{quote(model, safe='')}/converse-stream"


def build_body(prompt: str, max_tokens: int) -> dict[str, Any]:
    return {
        "messages": [{"role": "user", "content": [{"text": prompt}]}],
        "inferenceConfig": {"maxTokens": max_tokens, "temperature": 0},
    }


def signing_region(url: str, session: BotocoreSession | None = None) -> str:
    """The region in a bedrock-runtime host name, else the credential chain's configured region.

    Raises MissingAwsCredentials when neither names one."""
    m = _HOST_REGION.match(urlsplit(url).hostname or "")
    if m:
        return m.group(1)
    if session is None:
        import botocore.session

        session = botocore.session.Session()
    region = os.environ.get("AWS_REGION") or session.get_config_variable("region")  # the SDKs' AWS_REGION first
    if not region:
        raise MissingAwsCredentials(f"the host of {url} names no region and AWS_REGION is not set")
    return str(region)


def sigv4_signer(url: str) -> Callable[[str, str, dict[str, str], bytes], None]:
    """A function (method, url, headers, body) that adds SigV4 headers in place, with credentials resolved
    now from the standard chain. Raises MissingAwsCredentials when the chain finds none."""
    import botocore.session
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    session = botocore.session.Session()
    creds = session.get_credentials()
    if creds is None:
        raise MissingAwsCredentials("the standard credential chain found none")
    region = signing_region(url, session)

    def sign(method: str, request_url: str, headers: dict[str, str], body: bytes) -> None:
        req = AWSRequest(method=method, url=request_url, data=body, headers=dict(headers))
        SigV4Auth(creds.get_frozen_credentials(), SERVICE, region).add_auth(req)
        for name in ("Authorization", "X-Amz-Date", "X-Amz-Security-Token"):
            if name in req.headers:
                headers[name] = req.headers[name]

    return sign


class EventStreamDecoder:
    """Push bytes in with `feed`; get complete botocore EventStreamMessages back (same face as SseParser)."""

    def __init__(self) -> None:
        from botocore.eventstream import EventStreamBuffer

        self._buf = EventStreamBuffer()
        self.bytes_seen = 0
        self._framed = 0  # bytes of the complete frames decoded so far

    def feed(self, chunk: bytes) -> list[EventStreamMessage]:
        """The messages `chunk` completed; raises ProbeFault("bad_frame") for a corrupt frame (bad CRC or length)."""
        from botocore.eventstream import ParserError

        self.bytes_seen += len(chunk)
        self._buf.add_data(chunk)
        try:
            messages = list(self._buf)
        except ParserError as exc:
            raise ProbeFault(
                "bad_frame", f"a corrupt event-stream frame after {self.bytes_seen} bytes: {type(exc).__name__}"
            ) from None
        self._framed += sum(m.prelude.total_length for m in messages)
        return messages

    def close(self) -> None:
        """At the end of the stream: raises ProbeFault("bad_frame") when it ended inside a frame (a cut-off one)."""
        left = self.bytes_seen - self._framed
        if left:
            raise ProbeFault(
                "bad_frame",
                f"the stream ended inside an event-stream frame ({left} of its bytes, {self.bytes_seen} in all)",
            )


def _payload(msg: EventStreamMessage) -> dict[str, Any]:
    try:
        obj = json.loads(msg.payload) if msg.payload else {}
    except ValueError:
        raise ProbeFault(
            "bad_json", f"an event-stream frame's payload is not valid JSON: {msg.payload[:80]!r}"
        ) from None
    if not isinstance(obj, dict):
        raise ProbeFault("bad_json", f"an event-stream frame's payload is JSON but not an object: {msg.payload[:80]!r}")
    return obj


def interpret_message(msg: EventStreamMessage, info: EventInfo) -> None:
    """Fill `info` from one event-stream message; raises ProbeFault for exception frames."""
    headers = msg.headers
    mtype = headers.get(":message-type", "event")
    if mtype == "exception":
        kind = str(headers.get(":exception-type", "exception"))
        detail = _payload(msg).get("message", "")
        raise ProbeFault(_RETRYABLE.get(kind, "server_error"), f"{kind} in the stream: {detail}".strip())
    if mtype == "error":
        raise ProbeFault(
            "server_error",
            f"{headers.get(':error-code', 'error')} in the stream: {headers.get(':error-message', '')}".strip(),
        )
    kind = headers.get(":event-type", "")
    if kind == "contentBlockStart":
        info.is_first_event = True
    elif kind == "contentBlockDelta":
        info.is_first_event = True
        delta = _payload(msg).get("delta") or {}
        text = delta.get("text") if isinstance(delta, dict) else None
        reasoning = delta.get("reasoningContent") if isinstance(delta, dict) else None
        tool = delta.get("toolUse") if isinstance(delta, dict) else None
        info.is_visible = isinstance(text, str) and text != ""
        info.is_token = info.is_visible or bool(reasoning) or bool(tool)
    elif kind == "messageStop":
        info.done = True
    elif kind == "metadata":
        obj = _payload(msg)
        raw_usage = obj.get("usage")
        usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
        parts = [usage.get(k) for k in ("inputTokens", "cacheReadInputTokens", "cacheWriteInputTokens")]
        if any(isinstance(p, int) for p in parts):
            info.prompt_tokens = sum(p for p in parts if isinstance(p, int))
        if isinstance(usage.get("cacheReadInputTokens"), int):
            info.cached_tokens = usage["cacheReadInputTokens"]
        if isinstance(usage.get("outputTokens"), int):
            info.output_tokens = usage["outputTokens"]
        latency = (obj.get("metrics") or {}).get("latencyMs") if isinstance(obj.get("metrics"), dict) else None
        if isinstance(latency, (int, float)) and not isinstance(latency, bool):
            info.server_latency_ms = float(latency)
