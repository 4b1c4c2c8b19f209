"""Compare endpoints side by side, with honest statistics, and export a report a buyer can forward.

`compare()` reads the store once and returns a `Comparison`; the Compare page,
`ttft-planner report` and the exports (report_html / report_markdown /
report_csv) all render that one object.
"""

from planner.compare.bootstrap import CANNOT_TELL, bootstrap_difference, bootstrap_percentile
from planner.compare.comparison import Comparison, compare, method_lines, metrics_table
from planner.compare.cost import DEFAULT_TOKENS_PER_MONTH, cost_basis
from planner.compare.data import UnknownEndpoint, endpoint_names, vantages
from planner.compare.figures import CostBasis
from planner.compare.report import report_csv, report_html, report_markdown

__all__ = [
    "CANNOT_TELL",
    "Comparison",
    "CostBasis",
    "DEFAULT_TOKENS_PER_MONTH",
    "UnknownEndpoint",
    "bootstrap_difference",
    "bootstrap_percentile",
    "compare",
    "cost_basis",
    "endpoint_names",
    "method_lines",
    "metrics_table",
    "report_csv",
    "report_html",
    "report_markdown",
    "vantages",
]
