"""Live sources (issue 32): `source` (a connection by name, its credentials by reference, its sync watermark) and
`source_request` (the production requests read, one row per source and request id).

Revision ID: 0012_i32_sources
Revises: 0011_i30_skip_cause
"""

import sqlalchemy as sa
from alembic import op

revision = "0012_i32_sources"
down_revision = "0011_i30_skip_cause"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "source",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(120), nullable=False, unique=True),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("secret_ref", sa.String(200), nullable=False),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("watermark_ms", sa.BigInteger(), nullable=True),
        sa.Column("watermark_id", sa.String(200), nullable=True),
        sa.Column("synced_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("n_requests", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.String(500), nullable=True),
    )
    op.create_table(
        "source_request",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("source_id", sa.Integer(), sa.ForeignKey("source.id", ondelete="CASCADE"), nullable=False),
        sa.Column("request_id", sa.String(200), nullable=False),
        sa.Column("ts_ms", sa.BigInteger(), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("api_base", sa.String(300), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("cached_tokens", sa.Integer(), nullable=False),
        sa.Column("output_tokens", sa.Integer(), nullable=False),
        sa.Column("ttft_ms", sa.Float(), nullable=True),
        sa.Column("duration_ms", sa.Float(), nullable=True),
        sa.UniqueConstraint("source_id", "request_id", name="uq_source_request"),
    )
    op.create_index("ix_source_request_ts", "source_request", ["source_id", "ts_ms"])


def downgrade() -> None:
    op.drop_index("ix_source_request_ts", table_name="source_request")
    op.drop_table("source_request")
    op.drop_table("source")
