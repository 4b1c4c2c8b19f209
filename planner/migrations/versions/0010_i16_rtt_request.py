"""RTT requests (issue 16): the Regions page asks the worker of a vantage to measure RTT targets, as "Probe now" does.

Revision ID: 0010_i16_rtt_request
Revises: 0009_i18_server_latency
"""

import sqlalchemy as sa
from alembic import op

revision = "0010_i16_rtt_request"
down_revision = "0009_i18_server_latency"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rtt_request",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("vantage", sa.String(120), nullable=False),
        sa.Column("targets_json", sa.Text(), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("detail", sa.String(500), nullable=True),
        sa.Column("requested_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("claimed_by", sa.String(200), nullable=True),
        sa.Column("claimed_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("done_at_ms", sa.BigInteger(), nullable=True),
    )
    op.create_index("ix_rtt_request_status_requested", "rtt_request", ["status", "requested_at_ms"])


def downgrade() -> None:
    op.drop_index("ix_rtt_request_status_requested", table_name="rtt_request")
    op.drop_table("rtt_request")
