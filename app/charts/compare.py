"""Compare page charts: the builders shared with the report (planner.compare.charts), re-exported for the page.

The builders live in planner/ so that `ttft-planner report` (installed without
the app package) embeds exactly the charts the page shows.
"""

from planner.compare.charts import hourly_p95_figure, p95_interval_figure, phases_figure

__all__ = ["hourly_p95_figure", "p95_interval_figure", "phases_figure"]
