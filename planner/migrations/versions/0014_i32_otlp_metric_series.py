"""OpenTelemetry TTFT metrics (issue 32): `otlp_metric_series` keeps each cumulative series' last point (start, time,
bucket bounds and counts) per source, so the receiver adds only what a series gained since, across its restarts.

Revision ID: 0014_i32_otlp_metric_series
Revises: 0013_i32_source_hours
"""

import sqlalchemy as sa
from alembic import op

revision = "0014_i32_otlp_metric_series"
down_revision = "0013_i32_source_hours"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "otlp_metric_series",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("source_id", sa.Integer(), sa.ForeignKey("source.id", ondelete="CASCADE"), nullable=False),
        sa.Column("series_key", sa.String(64), nullable=False),
        sa.Column("start_ns", sa.BigInteger(), nullable=False),
        sa.Column("time_ns", sa.BigInteger(), nullable=False),
        sa.Column("buckets_json", sa.Text(), nullable=False),
        sa.UniqueConstraint("source_id", "series_key", name="uq_otlp_metric_series"),
    )


def downgrade() -> None:
    op.drop_table("otlp_metric_series")
