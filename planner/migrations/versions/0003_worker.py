"""Worker: leases, endpoint status, probe requests, cold readings, hourly rollups.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def _endpoint_fk() -> sa.ForeignKey:
    return sa.ForeignKey("endpoint.id", ondelete="CASCADE")


def upgrade() -> None:
    op.create_table(
        "worker_lease",
        sa.Column("vantage", sa.String(120), primary_key=True),
        sa.Column("holder", sa.String(200), nullable=False),
        sa.Column("acquired_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("renewed_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("expires_at_ms", sa.BigInteger(), nullable=False),
    )
    op.create_table(
        "endpoint_status",
        sa.Column("endpoint_id", sa.Integer(), _endpoint_fk(), primary_key=True),
        sa.Column("vantage", sa.String(120), primary_key=True),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("detail", sa.String(500), nullable=True),
        sa.Column("consecutive_failures", sa.Integer(), nullable=False),
        sa.Column("last_probe_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("next_slot_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("updated_at_ms", sa.BigInteger(), nullable=False),
    )
    op.create_table(
        "probe_request",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("endpoint_id", sa.Integer(), _endpoint_fk(), nullable=False),
        sa.Column("vantage", sa.String(120), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("idle_s", sa.Float(), nullable=True),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("detail", sa.String(500), nullable=True),
        sa.Column("requested_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("claimed_by", sa.String(200), nullable=True),
        sa.Column("claimed_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("done_at_ms", sa.BigInteger(), nullable=True),
    )
    op.create_index("ix_probe_request_status_requested", "probe_request", ["status", "requested_at_ms"])
    op.create_table(
        "cold_reading",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("endpoint_id", sa.Integer(), _endpoint_fk(), nullable=False),
        sa.Column("vantage", sa.String(120), nullable=False),
        sa.Column("request_id", sa.Integer(), nullable=True),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("detail", sa.String(500), nullable=True),
        sa.Column("idle_s", sa.Float(), nullable=False),
        sa.Column("requested_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("idle_until_ms", sa.BigInteger(), nullable=True),
        sa.Column("cold_started_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("cold_ttft_ms", sa.Float(), nullable=True),
        sa.Column("cold_attempts", sa.Integer(), nullable=False),
        sa.Column("cold_status_503", sa.Integer(), nullable=False),
        sa.Column("warm_ttft_ms", sa.Float(), nullable=True),
        sa.Column("cold_minus_warm_ms", sa.Float(), nullable=True),
        sa.Column("completed_at_ms", sa.BigInteger(), nullable=True),
    )
    op.create_index("ix_cold_reading_endpoint_requested", "cold_reading", ["endpoint_id", "requested_at_ms"])
    op.create_table(
        "probe_rollup",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("endpoint_id", sa.Integer(), _endpoint_fk(), nullable=False),
        sa.Column("vantage", sa.String(120), nullable=False),
        sa.Column("hour_start_ms", sa.BigInteger(), nullable=False),
        sa.Column("n_ok", sa.Integer(), nullable=False),
        sa.Column("n_failed", sa.Integer(), nullable=False),
        sa.Column("n_skipped", sa.Integer(), nullable=False),
        sa.Column("ttft_min_ms", sa.Float(), nullable=True),
        sa.Column("ttft_max_ms", sa.Float(), nullable=True),
        sa.Column("ttft_sum_ms", sa.Float(), nullable=False),
        sa.Column("hist_json", sa.Text(), nullable=False),
        sa.UniqueConstraint("endpoint_id", "vantage", "hour_start_ms", name="uq_probe_rollup_hour"),
    )


def downgrade() -> None:
    op.drop_table("probe_rollup")
    op.drop_index("ix_cold_reading_endpoint_requested", table_name="cold_reading")
    op.drop_table("cold_reading")
    op.drop_index("ix_probe_request_status_requested", table_name="probe_request")
    op.drop_table("probe_request")
    op.drop_table("endpoint_status")
    op.drop_table("worker_lease")
