"""The server's own latency figure beside ours (issue 18: Bedrock's metadata.metrics.latencyMs), per probe sample.

Revision ID: 0009_i18_server_latency
Revises: 0008_i17_audit
"""

import sqlalchemy as sa
from alembic import op

revision = "0009_i18_server_latency"
down_revision = "0008_i17_audit"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("probe_sample") as batch:
        batch.add_column(sa.Column("server_latency_ms", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("probe_sample") as batch:
        batch.drop_column("server_latency_ms")
