"""Load sweeps (`ttft-planner sweep`, issue 14): one row per run with its provenance, one per load step.

Revision ID: 0006_i14_sweeps
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006_i14_sweeps"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sweep_run",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("base_url", sa.String(500), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("protocol", sa.String(40), nullable=False),
        sa.Column("api_key_env", sa.String(120), nullable=False),
        sa.Column("mode", sa.String(20), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("max_tokens", sa.Integer(), nullable=False),
        sa.Column("step_duration_s", sa.Float(), nullable=False),
        sa.Column("target_p95_ms", sa.Float(), nullable=True),
        sa.Column("knee_load", sa.Float(), nullable=True),
        sa.Column("over_load", sa.Float(), nullable=True),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("vantage", sa.String(120), nullable=False),
        sa.Column("tool_version", sa.String(40), nullable=False),
        sa.Column("client_cpu_ms_per_request", sa.Float(), nullable=False),
        sa.Column("note", sa.String(500), nullable=False),
        sa.Column("started_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("finished_at_ms", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_sweep_run_started_at_ms", "sweep_run", ["started_at_ms"])
    op.create_table(
        "sweep_step",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("sweep_run.id"), nullable=False),
        sa.Column("step_index", sa.Integer(), nullable=False),
        sa.Column("load", sa.Float(), nullable=False),
        sa.Column("n_sent", sa.Integer(), nullable=False),
        sa.Column("n_ok", sa.Integer(), nullable=False),
        sa.Column("ttft_p50_ms", sa.Float(), nullable=True),
        sa.Column("ttft_p95_ms", sa.Float(), nullable=True),
        sa.Column("ttft_p99_ms", sa.Float(), nullable=True),
        sa.Column("offered_rps", sa.Float(), nullable=False),
        sa.Column("achieved_rps", sa.Float(), nullable=False),
        sa.Column("send_lag_p95_ms", sa.Float(), nullable=False),
        sa.Column("wall_s", sa.Float(), nullable=False),
        sa.Column("client_cpu_ms_per_request", sa.Float(), nullable=False),
        sa.Column("errors_json", sa.String(2000), nullable=False),
    )
    op.create_index("ix_sweep_step_run_id", "sweep_step", ["run_id"])


def downgrade() -> None:
    op.drop_index("ix_sweep_step_run_id", table_name="sweep_step")
    op.drop_table("sweep_step")
    op.drop_index("ix_sweep_run_started_at_ms", table_name="sweep_run")
    op.drop_table("sweep_run")
