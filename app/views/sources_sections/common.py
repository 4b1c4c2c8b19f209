"""What the Sources page's sections share: the kinds as the page names them, the Prometheus profiles, whether a
variable is set, and a URL's host that never shows a secret (a variable's name is checked by
planner.inputs.env_names)."""

from __future__ import annotations

import os

from planner.inputs.urls import url_host as host
from planner.sources.registry import SourceKind

__all__ = ["KINDS", "PROM_PROFILES", "host", "is_set", "unset"]

KINDS = {
    SourceKind.LITELLM: "LiteLLM proxy (PostgreSQL)",
    SourceKind.OTLP: "OpenTelemetry spans (OTLP receiver)",
    SourceKind.PROMETHEUS: "Prometheus (engine histograms)",
}
PROM_PROFILES = {"vllm": "vLLM", "sglang": "SGLang", "tgi": "TGI"}


def is_set(var: str) -> bool:
    return bool(os.environ.get(var))


def unset(var: str) -> str:
    return (
        f"${var} is not set on the dashboard's server: set it there to the LiteLLM proxy's PostgreSQL URL "
        "(postgresql://user:password@host/db; a read-only role is enough) and restart the dashboard."
    )
