"""Calibrations on record (issue 45): each `ttft-planner calibrate` run's prefill rounds, so that the speed spread a
spec carries pools every calibration of the same endpoint, and a batching engine's step-model fit (shown on the
What-if page).

Revision ID: 0016_i45_calibration
Revises: 0015_i32_source_metric
"""

import sqlalchemy as sa
from alembic import op

revision = "0016_i45_calibration"
down_revision = "0015_i32_source_metric"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "calibration",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("base_url", sa.String(500), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("at_ms", sa.BigInteger(), nullable=False),
        sa.Column("rates_json", sa.Text(), nullable=False),
        sa.Column("spec", sa.String(2000), nullable=False),
        sa.Column("fit_json", sa.Text(), nullable=True),
    )
    op.create_index("ix_calibration_base_url", "calibration", ["base_url"])


def downgrade() -> None:
    op.drop_index("ix_calibration_base_url", table_name="calibration")
    op.drop_table("calibration")
