"""The audit log (issue 17): who changed endpoints, worksheets, uploads and alert rules.

Revision ID: 0008_i17_audit
Revises: 0007_i17_alerts
"""

import sqlalchemy as sa
from alembic import op

revision = "0008_i17_audit"
down_revision = "0007_i17_alerts"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "audit_event",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("at_ms", sa.BigInteger(), nullable=False),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("role", sa.String(20), nullable=False),
        sa.Column("action", sa.String(60), nullable=False),
        sa.Column("object_name", sa.String(200), nullable=False),
        sa.Column("detail", sa.String(500), nullable=False),
    )
    op.create_index("ix_audit_event_at_ms", "audit_event", ["at_ms"])


def downgrade() -> None:
    op.drop_index("ix_audit_event_at_ms", table_name="audit_event")
    op.drop_table("audit_event")
