"""Prometheus sources and production hours (issue 32): `source` gains the URL, metric profile and model filter a
Prometheus source reads with; `source_hour` holds production TTFT per hour and model, as a source that reports hours
rather than requests gives it (Prometheus' histograms, OpenTelemetry's TTFT metric), with the bucket counts an hour's
percentiles were computed from, where it has them.

Revision ID: 0013_i32_source_hours
Revises: 0012_i32_sources
"""

import sqlalchemy as sa
from alembic import op

revision = "0013_i32_source_hours"
down_revision = "0012_i32_sources"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("source") as batch:
        batch.add_column(sa.Column("url", sa.String(500), nullable=True))
        batch.add_column(sa.Column("profile", sa.String(40), nullable=True))
        batch.add_column(sa.Column("model_filter", sa.String(200), nullable=True))
    op.create_table(
        "source_hour",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("source_id", sa.Integer(), sa.ForeignKey("source.id", ondelete="CASCADE"), nullable=False),
        sa.Column("hour_start_ms", sa.BigInteger(), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("requests", sa.Float(), nullable=False),
        sa.Column("p50_ms", sa.Float(), nullable=True),
        sa.Column("p95_ms", sa.Float(), nullable=True),
        sa.Column("queue_p95_ms", sa.Float(), nullable=True),
        sa.Column("waiting_mean", sa.Float(), nullable=True),
        sa.Column("buckets_json", sa.Text(), nullable=True),
        sa.UniqueConstraint("source_id", "hour_start_ms", "model", name="uq_source_hour"),
    )


def downgrade() -> None:
    op.drop_table("source_hour")
    with op.batch_alter_table("source") as batch:
        batch.drop_column("model_filter")
        batch.drop_column("profile")
        batch.drop_column("url")
