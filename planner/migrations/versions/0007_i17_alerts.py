"""SLO alerts (issue 17): rules, per-series state, transition history and the delivery outbox.

Revision ID: 0007_i17_alerts
Revises: 0006_i14_sweeps
"""

import sqlalchemy as sa
from alembic import op

revision = "0007_i17_alerts"
down_revision = "0006_i14_sweeps"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "alert_rule",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(120), nullable=False),
        sa.Column("kind", sa.String(30), nullable=False),
        sa.Column("threshold", sa.Float(), nullable=False),
        sa.Column("window_s", sa.Float(), nullable=False),
        sa.Column("for_s", sa.Float(), nullable=False),
        sa.Column("min_n", sa.Integer(), nullable=False),
        sa.Column("clear_margin", sa.Float(), nullable=False),
        sa.Column("endpoint_id", sa.Integer(), sa.ForeignKey("endpoint.id", ondelete="CASCADE"), nullable=True),
        sa.Column("interaction", sa.String(40), nullable=False),
        sa.Column("webhook_env", sa.String(120), nullable=False),
        sa.Column("webhook_format", sa.String(20), nullable=False),
        sa.Column("email_to", sa.String(500), nullable=False),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_alert_rule_name", "alert_rule", ["name"], unique=True)
    op.create_table(
        "alert_series",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("rule_id", sa.Integer(), sa.ForeignKey("alert_rule.id", ondelete="CASCADE"), nullable=False),
        sa.Column("endpoint_id", sa.Integer(), sa.ForeignKey("endpoint.id", ondelete="CASCADE"), nullable=False),
        sa.Column("vantage", sa.String(120), nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("since_ms", sa.BigInteger(), nullable=True),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("evaluated_at_ms", sa.BigInteger(), nullable=False),
        sa.UniqueConstraint("rule_id", "endpoint_id", "vantage", name="uq_alert_series"),
    )
    op.create_table(
        "alert_event",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("rule_id", sa.Integer(), sa.ForeignKey("alert_rule.id", ondelete="CASCADE"), nullable=False),
        sa.Column("endpoint_id", sa.Integer(), sa.ForeignKey("endpoint.id", ondelete="CASCADE"), nullable=False),
        sa.Column("vantage", sa.String(120), nullable=False),
        sa.Column("transition", sa.String(20), nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("threshold", sa.Float(), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("window_s", sa.Float(), nullable=False),
        sa.Column("message", sa.String(1000), nullable=False),
        sa.Column("at_ms", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_alert_event_rule_id", "alert_event", ["rule_id"])
    op.create_index("ix_alert_event_at_ms", "alert_event", ["at_ms"])
    op.create_table(
        "alert_delivery",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("event_id", sa.Integer(), sa.ForeignKey("alert_event.id", ondelete="CASCADE"), nullable=False),
        sa.Column("channel", sa.String(20), nullable=False),
        sa.Column("target", sa.String(500), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("delivered_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("last_error", sa.String(500), nullable=False),
    )
    op.create_index("ix_alert_delivery_event_id", "alert_delivery", ["event_id"])


def downgrade() -> None:
    for index, table in (
        ("ix_alert_delivery_event_id", "alert_delivery"),
        ("ix_alert_event_at_ms", "alert_event"),
        ("ix_alert_event_rule_id", "alert_event"),
    ):
        op.drop_index(index, table_name=table)
    for table in ("alert_delivery", "alert_event", "alert_series"):
        op.drop_table(table)
    op.drop_index("ix_alert_rule_name", table_name="alert_rule")
    op.drop_table("alert_rule")
