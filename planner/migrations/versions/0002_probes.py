"""Endpoint registry and raw TTFT probe samples.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "endpoint",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(120), nullable=False),
        sa.Column("provider", sa.String(120), nullable=False),
        sa.Column("region", sa.String(120), nullable=False),
        sa.Column("protocol", sa.String(40), nullable=False),
        sa.Column("base_url", sa.String(500), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("api_key_env", sa.String(120), nullable=False),
        sa.Column("interval_s", sa.Float(), nullable=False),
        sa.Column("timeout_s", sa.Float(), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("max_tokens", sa.Integer(), nullable=False),
        sa.Column("connection_policy", sa.String(20), nullable=False),
        sa.Column("scale_down_window_s", sa.Float(), nullable=True),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("vantage", sa.String(120), nullable=False),
        sa.Column("simulated", sa.Boolean(), nullable=False),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("updated_at_ms", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_endpoint_name", "endpoint", ["name"], unique=True)
    op.create_table(
        "probe_sample",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("endpoint_id", sa.Integer(), sa.ForeignKey("endpoint.id", ondelete="CASCADE"), nullable=False),
        sa.Column("vantage", sa.String(120), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("scheduled_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("started_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("ok", sa.Boolean(), nullable=False),
        sa.Column("error_class", sa.String(40), nullable=True),
        sa.Column("error_detail", sa.String(500), nullable=True),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("http_version", sa.String(20), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("retry_wait_ms", sa.Float(), nullable=False),
        sa.Column("conn_reused", sa.Boolean(), nullable=False),
        sa.Column("remote_ip", sa.String(64), nullable=True),
        sa.Column("proxy", sa.String(200), nullable=True),
        *[
            sa.Column(c, sa.Float(), nullable=True)
            for c in (
                "dns_ms",
                "connect_ms",
                "tls_ms",
                "headers_ms",
                "first_event_ms",
                "ttft_ms",
                "first_content_ms",
                "total_ms",
            )
        ],
        *[
            sa.Column(c, sa.Integer(), nullable=True)
            for c in ("output_tokens", "prompt_tokens", "cached_tokens", "prompt_tokens_requested")
        ],
        sa.Column("idle_gap_ms", sa.Float(), nullable=True),
        sa.Column("buffered", sa.Boolean(), nullable=False),
        sa.Column("cached_series", sa.Boolean(), nullable=False),
        sa.UniqueConstraint("endpoint_id", "vantage", "kind", "scheduled_at_ms", name="uq_probe_sample_slot"),
    )
    op.create_index("ix_probe_sample_endpoint_started", "probe_sample", ["endpoint_id", "started_at_ms"])
    op.create_index(
        "ix_probe_sample_vantage_endpoint_started", "probe_sample", ["vantage", "endpoint_id", "started_at_ms"]
    )


def downgrade() -> None:
    op.drop_table("probe_sample")
    op.drop_index("ix_endpoint_name", table_name="endpoint")
    op.drop_table("endpoint")
