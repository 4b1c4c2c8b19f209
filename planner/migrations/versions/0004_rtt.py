"""RTT targets (custom and scheduled) and raw RTT samples from the server and the browser.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rtt_target",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("region_id", sa.String(120), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("provider", sa.String(120), nullable=False),
        sa.Column("target", sa.String(500), nullable=False),
        sa.Column("city", sa.String(120), nullable=False),
        sa.Column("lat", sa.Float(), nullable=True),
        sa.Column("lon", sa.Float(), nullable=True),
        sa.Column("anycast", sa.Boolean(), nullable=False),
        sa.Column("interval_s", sa.Float(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("vantage", sa.String(120), nullable=False),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("updated_at_ms", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_rtt_target_region_id", "rtt_target", ["region_id"], unique=True)
    op.create_table(
        "rtt_sample",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("region_id", sa.String(120), nullable=False),
        sa.Column("target", sa.String(500), nullable=False),
        sa.Column("vantage", sa.String(120), nullable=False),
        sa.Column("side", sa.String(10), nullable=False),
        sa.Column("method", sa.String(30), nullable=False),
        sa.Column("run_id", sa.String(40), nullable=False),
        sa.Column("rtt_ms", sa.Float(), nullable=True),
        sa.Column("error_class", sa.String(40), nullable=True),
        sa.Column("error_detail", sa.String(500), nullable=True),
        sa.Column("remote_ip", sa.String(64), nullable=True),
        sa.Column("proxy", sa.String(200), nullable=True),
        sa.Column("measured_at_ms", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_rtt_sample_region_vantage_measured", "rtt_sample", ["region_id", "vantage", "measured_at_ms"])
    op.create_index("ix_rtt_sample_measured", "rtt_sample", ["measured_at_ms"])


def downgrade() -> None:
    op.drop_index("ix_rtt_sample_measured", table_name="rtt_sample")
    op.drop_index("ix_rtt_sample_region_vantage_measured", table_name="rtt_sample")
    op.drop_table("rtt_sample")
    op.drop_index("ix_rtt_target_region_id", table_name="rtt_target")
    op.drop_table("rtt_target")
