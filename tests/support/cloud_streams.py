"""Wire-exact frames of the cloud protocols for tests/support/servers.py scripts, and a server-side SigV4 check.

- `responses_event`: one OpenAI Responses SSE event (`event:` line + JSON with the same `type`).
- `gemini_chunk`: one `streamGenerateContent?alt=sse` chunk.
- `eventstream_frame`: one `application/vnd.amazon.eventstream` message, byte-exact (prelude, CRC32s, string
  headers), as Bedrock ConverseStream sends it; `bedrock_event` / `bedrock_exception` build the usual ones.
- `verify_sigv4`: recompute a recorded request's SigV4 signature with botocore from the secret key, as AWS does.
"""

from __future__ import annotations

import hmac
import json
import struct
import zlib

from tests.support.servers import RecordedRequest, sse

__all__ = ["bedrock_event", "bedrock_exception", "eventstream_frame", "gemini_chunk", "responses_event", "verify_sigv4"]


def responses_event(kind: str, **payload) -> bytes:
    return sse({"type": kind, **payload}, event=kind)


def gemini_chunk(
    parts: list[dict] | None = None, *, usage: dict | None = None, finish: str | None = None, role: str = "model"
) -> bytes:
    """A chunk with one candidate holding `parts` (None: no candidates at all), and optional usageMetadata."""
    obj: dict = {"modelVersion": "gemini-test", "responseId": "r-1"}
    if parts is not None:
        cand: dict = {"content": {"role": role, "parts": parts}, "index": 0}
        if finish:
            cand["finishReason"] = finish
        obj["candidates"] = [cand]
    if usage is not None:
        obj["usageMetadata"] = usage
    return sse(obj)


def _header(name: str, value: str) -> bytes:
    n, v = name.encode(), value.encode()
    return struct.pack(">B", len(n)) + n + b"\x07" + struct.pack(">H", len(v)) + v  # 7 = string


def eventstream_frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One event-stream message: total length, headers length, prelude CRC, headers, payload, message CRC."""
    hdr = b"".join(_header(k, v) for k, v in headers.items())
    total = 12 + len(hdr) + len(payload) + 4
    prelude = struct.pack(">II", total, len(hdr))
    prelude += struct.pack(">I", zlib.crc32(prelude) & 0xFFFFFFFF)
    body = prelude + hdr + payload
    return body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def bedrock_event(kind: str, **payload) -> bytes:
    """A ConverseStream event frame (`:event-type` kind, JSON payload)."""
    return eventstream_frame(
        {":event-type": kind, ":content-type": "application/json", ":message-type": "event"},
        json.dumps({**payload, "p": "abcd"}).encode(),
    )


def bedrock_exception(kind: str, message: str) -> bytes:
    return eventstream_frame(
        {":exception-type": kind, ":content-type": "application/json", ":message-type": "exception"},
        json.dumps({"message": message}).encode(),
    )


def verify_sigv4(req: RecordedRequest, access_key: str, secret_key: str, region: str, service: str = "bedrock") -> bool:
    """True when `req` carries a SigV4 Authorization whose signature botocore recomputes from the secret key over
    the signed headers, the path and the exact body bytes, for this key id, region and service."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    auth = req.headers.get("authorization", "")
    if not auth.startswith("AWS4-HMAC-SHA256 "):
        return False
    fields = dict(part.strip().split("=", 1) for part in auth[len("AWS4-HMAC-SHA256 ") :].split(","))
    key_id, _date, scope_region, scope_service, _ = fields["Credential"].split("/")
    if (key_id, scope_region, scope_service) != (access_key, region, service):
        return False
    signed = fields["SignedHeaders"].split(";")
    headers = {name: req.headers[name] for name in signed}
    areq = AWSRequest(method=req.method, url=f"http://{req.headers['host']}{req.path}", data=req.body, headers=headers)
    areq.context["timestamp"] = req.headers["x-amz-date"]
    signer = SigV4Auth(Credentials(access_key, secret_key), service, region)
    expected = signer.signature(signer.string_to_sign(areq, signer.canonical_request(areq)), areq)
    return hmac.compare_digest(expected, fields["Signature"])
