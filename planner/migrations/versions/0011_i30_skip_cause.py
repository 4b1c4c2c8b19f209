"""A skipped slot's cause as data (issue 30): probe_sample.skip_cause holds a planner.endpoints.samples.SkipCause value.

Skipped rows stored before this revision said their cause only in words (error_detail). Each is filled from them where
the words are the worker's own, which have not changed since skips were first stored: the cause's text alone, or with
the particulars the worker adds (a late slot's lateness, a long gap's count of earlier slots). Any other row keeps
NULL. One UPDATE, inside the upgrade's transaction; the words are copied here, not imported, so this revision reads the
rows as they were written whatever the code says later.

Revision ID: 0011_i30_skip_cause
Revises: 0010_i16_rtt_request
"""

import sqlalchemy as sa
from alembic import op

revision = "0011_i30_skip_cause"
down_revision = "0010_i16_rtt_request"
branch_labels = None
depends_on = None

# SkipCause value → the words a skipped row's error_detail starts with (planner/endpoints/samples.py's SkipCause.text,
# as of this revision).
_IN_FLIGHT = "previous probe still running"
_PAUSED = "paused for a cold reading"
_PASSED_OVER = "missed: the worker was suspended or overloaded"
_NOT_RUNNING = "missed: the worker was not running"
_CRASHED = "lost in a crash: the previous worker was killed before storing this slot"


def _gap(words: str) -> str:
    """A gap's skip: its words alone, or (the first row of a long gap) with the count of earlier slots not recorded."""
    return f"(error_detail = '{words}' OR error_detail LIKE '{words} (% earlier slots not recorded)')"


_BACKFILL = f"""
UPDATE probe_sample SET skip_cause = CASE
    WHEN error_detail = '{_IN_FLIGHT}' THEN 'in_flight'
    WHEN error_detail = '{_PAUSED}' THEN 'paused'
    WHEN error_detail LIKE 'late by % ms (process suspended?)' THEN 'late'
    WHEN {_gap(_PASSED_OVER)} THEN 'passed_over'
    WHEN {_gap(_NOT_RUNNING)} THEN 'not_running'
    WHEN {_gap(_CRASHED)} THEN 'crashed'
END
WHERE kind = 'skipped'
"""


def upgrade() -> None:
    with op.batch_alter_table("probe_sample") as batch:
        batch.add_column(sa.Column("skip_cause", sa.String(20), nullable=True))
    op.execute(_BACKFILL)


def downgrade() -> None:
    with op.batch_alter_table("probe_sample") as batch:
        batch.drop_column("skip_cause")
