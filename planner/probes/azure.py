"""Azure OpenAI / Azure AI Foundry: the deployment URL, `api-version`, and the two ways to authenticate.

base_url is the deployment URL, e.g.
`https://RESOURCE.openai.azure.com/openai/deployments/DEPLOYMENT` (optionally with
`?api-version=...`; DEFAULT_API_VERSION when absent), or the v1 surface
`https://RESOURCE.openai.azure.com/openai/v1` (no api-version). The stream is the
OpenAI chat format, including Azure's metadata-only first chunk
(`choices: []` with `prompt_filter_results`), which is neither the first event nor a token.

The variable named by api_key_env holds either a resource key (sent as `api-key`)
or a Microsoft Entra ID access token (a JWT, sent as `Authorization: Bearer`), e.g.
from `az account get-access-token --resource https://cognitiveservices.azure.com`.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["DEFAULT_API_VERSION", "auth_headers", "is_entra_token", "request_url"]

DEFAULT_API_VERSION = "2024-10-21"  # the current GA data-plane version (learn.microsoft.com, as of 2026-11)
_JWT = re.compile(r"^eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$")


def is_entra_token(secret: str) -> bool:
    """True when `secret` is a JWT (an Entra ID access token) rather than a resource key (32 hex characters)."""
    return bool(_JWT.match(secret.strip()))


def auth_headers(secret: str | None) -> dict[str, str]:
    """`api-key: KEY` for a resource key, `Authorization: Bearer TOKEN` for an Entra ID token; {} without one."""
    if not secret:
        return {}
    return {"Authorization": f"Bearer {secret}"} if is_entra_token(secret) else {"api-key": secret}


def request_url(base_url: str) -> str:
    """`{deployment}/chat/completions?api-version=V` (V from base_url's query, else DEFAULT_API_VERSION);
    under `/openai/v1` no api-version is added."""
    parts = urlsplit(base_url)
    path = parts.path.rstrip("/")
    query = dict(parse_qsl(parts.query))
    if not path.endswith("/openai/v1"):
        query.setdefault("api-version", DEFAULT_API_VERSION)
    return urlunsplit((parts.scheme, parts.netloc, path + "/chat/completions", urlencode(query), ""))
