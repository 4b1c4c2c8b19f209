"""A Prometheus source may name its own TTFT histogram (issue 32): `source.metric`, read instead of its profile's.

Revision ID: 0015_i32_source_metric
Revises: 0014_i32_otlp_metric_series
"""

import sqlalchemy as sa
from alembic import op

revision = "0015_i32_source_metric"
down_revision = "0014_i32_otlp_metric_series"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("source") as batch:
        batch.add_column(sa.Column("metric", sa.String(200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("source") as batch:
        batch.drop_column("metric")
