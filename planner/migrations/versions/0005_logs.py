"""Request-log uploads and their per-request numeric rows (no prompt or completion text).

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "log_upload",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(300), nullable=False),
        sa.Column("uploaded_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("n_requests", sa.Integer(), nullable=False),
        sa.Column("n_rejected", sa.Integer(), nullable=False),
        sa.Column("formats_json", sa.Text(), nullable=False),
        sa.Column("mapping_json", sa.Text(), nullable=False),
        sa.Column("tokens_estimated", sa.Boolean(), nullable=False),
        sa.Column("first_ts_ms", sa.BigInteger(), nullable=True),
        sa.Column("last_ts_ms", sa.BigInteger(), nullable=True),
    )
    op.create_table(
        "log_request",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("upload_id", sa.Integer(), sa.ForeignKey("log_upload.id", ondelete="CASCADE"), nullable=False),
        sa.Column("source", sa.String(300), nullable=False),
        sa.Column("ts_ms", sa.BigInteger(), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("cached_tokens", sa.Integer(), nullable=False),
        sa.Column("output_tokens", sa.Integer(), nullable=False),
        sa.Column("ttft_ms", sa.Float(), nullable=True),
        sa.Column("duration_ms", sa.Float(), nullable=True),
    )
    op.create_index("ix_log_request_upload_ts", "log_request", ["upload_id", "ts_ms"])


def downgrade() -> None:
    op.drop_index("ix_log_request_upload_ts", table_name="log_request")
    op.drop_table("log_request")
    op.drop_table("log_upload")
