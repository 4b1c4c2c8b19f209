"""Google Gemini (AI Studio) and Vertex AI: `POST {base}/models/{model}:streamGenerateContent?alt=sse`.

- "gemini": base `https://generativelanguage.googleapis.com/v1beta`; the key goes in `x-goog-api-key`.
- "vertex": base `https://{region}-aiplatform.googleapis.com/v1/projects/{project}/locations/{region}/publishers/google`
  (or `aiplatform.googleapis.com` with `locations/global`); an OAuth access token as `Authorization: Bearer`, read
  from the variable api_key_env names (e.g. `gcloud auth print-access-token`) or, with no variable and the
  optional google-auth package installed, from Application Default Credentials.

What counts: the first event is the first chunk whose first candidate has content; a token is a part with
non-empty text (visible unless `thought: true`, which is reasoning) or a functionCall/executableCode part.
A chunk with only `usageMetadata`, or a candidate with an empty or role-only content, is neither.
`usageMetadata` (candidates + thoughts = output, cachedContentTokenCount) usually comes with the last chunk.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from planner.probes.errors import MissingApiKey, ProbeFault
from planner.probes.events import EventInfo, as_object, token_count, token_total

__all__ = ["MissingGoogleCredentials", "adc_token", "build_body", "interpret_data", "request_url", "retry_delay_s"]

_CALL_PARTS = ("functionCall", "executableCode", "toolCall")


class MissingGoogleCredentials(MissingApiKey):
    """A Vertex endpoint names no token variable and Application Default Credentials gave no token."""

    def __init__(self) -> None:
        self.env_name = ""
        Exception.__init__(
            self,
            "no Google credentials: name a variable holding an access token "
            "(gcloud auth print-access-token), or install google-auth and run "
            "gcloud auth application-default login",
        )


def request_url(base_url: str, model: str) -> str:
    """The streaming URL; a model given as `models/NAME` is accepted too."""
    name = model.removeprefix("models/")
    return f"{base_url.rstrip('/')}/models/{quote(name, safe='.-_@')}:streamGenerateContent?alt=sse"


def build_body(prompt: str, max_tokens: int) -> dict[str, Any]:
    return {
        "contents": [{"role": "user", "parts": [{"text": prompt}]}],
        "generationConfig": {"maxOutputTokens": max_tokens, "temperature": 0},
    }


_adc: list[Any] = []  # the process's Application Default Credentials once found (refreshed when expired)


def adc_token() -> str | None:
    """An access token from Application Default Credentials, or None when google-auth is not installed or
    finds no credentials (the caller reports that as an auth failure). The credentials are looked up once per
    process and refreshed only when their token has expired."""
    try:
        import google.auth  # type: ignore[import-not-found,import-untyped,unused-ignore]
        import google.auth.transport.requests  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError:
        return None
    try:
        if not _adc:
            creds, _ = google.auth.default(scopes=["https://www.googleapis.com/auth/cloud-platform"])
            _adc.append(creds)
        creds = _adc[0]
        if not creds.valid:
            creds.refresh(google.auth.transport.requests.Request())
    except Exception:  # noqa: BLE001 - any ADC failure is "no credentials" to the user
        return None
    return getattr(creds, "token", None)


def retry_delay_s(body: str) -> float | None:
    """Seconds a 429 `RESOURCE_EXHAUSTED` body asks to wait (its RetryInfo `retryDelay`, e.g. "7s"), or None."""
    try:
        details = as_object(as_object(json.loads(body)).get("error")).get("details") or []
    except (ValueError, RecursionError):  # not JSON, or nested too deeply to parse
        return None
    for d in details if isinstance(details, list) else []:
        delay = d.get("retryDelay") if isinstance(d, dict) else None
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                return max(0.0, float(delay[:-1]))
            except ValueError:
                return None
    return None


def interpret_data(data: str, info: EventInfo) -> None:
    """Fill `info` from one chunk; raises ProbeFault for an error chunk."""
    try:
        obj = json.loads(data)
    except ValueError:
        snippet = data if len(data) <= 80 else data[:80] + "…"
        raise ProbeFault("bad_json", f"an SSE event's data is not valid JSON: {snippet!r}") from None
    if isinstance(obj, list) and len(obj) == 1:  # a JSON-array chunk (alt=sse missing on a proxy's retry)
        obj = obj[0]
    if not isinstance(obj, dict):
        raise ProbeFault("bad_json", f"an SSE event's data is JSON but not an object: {data[:80]!r}")
    err = obj.get("error")
    if err:
        status = err.get("status", "") if isinstance(err, dict) else ""
        cls = "rate_limited" if status == "RESOURCE_EXHAUSTED" else "server_error"
        msg = err.get("message", "") if isinstance(err, dict) else str(err)
        raise ProbeFault(cls, f"error event in the stream: {status} {msg}".strip())
    usage = as_object(obj.get("usageMetadata"))
    if (prompt := token_count(usage.get("promptTokenCount"))) is not None:
        info.prompt_tokens = prompt
    if (output := token_total(usage.get(k) for k in ("candidatesTokenCount", "thoughtsTokenCount"))) is not None:
        info.output_tokens = output
    if (cached := token_count(usage.get("cachedContentTokenCount"))) is not None:
        info.cached_tokens = cached
    candidates = obj.get("candidates")
    if not isinstance(candidates, list) or not candidates or not isinstance(candidates[0], dict):
        return
    content = candidates[0].get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    if not isinstance(parts, list) or not parts:
        return  # finishReason-only or role-only candidate
    info.is_first_event = True
    for part in parts:
        if not isinstance(part, dict):
            continue
        text = part.get("text")
        if isinstance(text, str) and text != "":
            info.is_token = True
            if not part.get("thought"):
                info.is_visible = True
        if any(part.get(k) for k in _CALL_PARTS):
            info.is_token = True
