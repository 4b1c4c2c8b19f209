"""Probe tables: the endpoint registry and raw TTFT samples (one row per attempt outcome).

Raw samples are the source of truth (DESIGN §2): UTC epoch ms, every phase
timing in ms from send, failures stored with an error class and never used
in percentiles. Skipped schedule slots are rows too (kind='skipped').
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

__all__ = ["EndpointRow", "ProbeSampleRow", "SAMPLE_KINDS"]

# scheduled: the worker's regular probe; manual: `probe --store` or "probe now";
# cold / warm: the two halves of a cold reading; skipped: a slot the worker could not run.
SAMPLE_KINDS = ("scheduled", "manual", "cold", "warm", "skipped")


class EndpointRow(SQLModel, table=True):
    """A streaming endpoint to probe. The API key is referenced by env var name, never stored."""

    __tablename__ = "endpoint"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=120, unique=True, index=True)
    provider: str = Field(default="", max_length=120)
    region: str = Field(default="", max_length=120)
    protocol: str = Field(default="openai-chat", max_length=40)  # openai-chat | openai-completions | anthropic
    base_url: str = Field(max_length=500)
    model: str = Field(max_length=200)
    api_key_env: str = Field(default="", max_length=120)
    interval_s: float = 60.0
    timeout_s: float = 30.0
    prompt_tokens: int = 1000
    max_tokens: int = 64
    connection_policy: str = Field(default="fresh", max_length=20)  # fresh | keep-alive
    scale_down_window_s: float | None = None
    enabled: bool = True
    vantage: str = Field(default="", max_length=120)  # "" = any vantage probes it
    simulated: bool = False
    created_at_ms: int = Field(sa_type=sa.BigInteger)
    updated_at_ms: int = Field(sa_type=sa.BigInteger)


class ProbeSampleRow(SQLModel, table=True):
    """One TTFT probe outcome. Timings are ms from just before the request was sent."""

    __tablename__ = "probe_sample"
    __table_args__ = (
        sa.Index("ix_probe_sample_endpoint_started", "endpoint_id", "started_at_ms"),
        sa.Index("ix_probe_sample_vantage_endpoint_started", "vantage", "endpoint_id", "started_at_ms"),
        # A restarted worker re-inserting a slot it already stored is a no-op, not a duplicate.
        sa.UniqueConstraint("endpoint_id", "vantage", "kind", "scheduled_at_ms", name="uq_probe_sample_slot"),
    )

    id: int | None = Field(default=None, primary_key=True)
    endpoint_id: int = Field(foreign_key="endpoint.id", ondelete="CASCADE")
    vantage: str = Field(default="", max_length=120)
    kind: str = Field(default="scheduled", max_length=20)
    scheduled_at_ms: int = Field(sa_type=sa.BigInteger)  # the slot (UTC epoch ms); manual runs use their send time
    started_at_ms: int = Field(sa_type=sa.BigInteger)
    ok: bool = False
    error_class: str | None = Field(default=None, max_length=40)
    error_detail: str | None = Field(default=None, max_length=500)
    status_code: int | None = None
    http_version: str | None = Field(default=None, max_length=20)
    attempts: int = 1
    retry_wait_ms: float = 0.0
    conn_reused: bool = False
    remote_ip: str | None = Field(default=None, max_length=64)
    proxy: str | None = Field(default=None, max_length=200)
    dns_ms: float | None = None
    connect_ms: float | None = None
    tls_ms: float | None = None
    headers_ms: float | None = None
    first_event_ms: float | None = None
    ttft_ms: float | None = None
    first_content_ms: float | None = None
    total_ms: float | None = None
    output_tokens: int | None = None
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    prompt_tokens_requested: int | None = None
    idle_gap_ms: float | None = None
    buffered: bool = False
    cached_series: bool = False  # the prompt was repeated on purpose (--cached)
