"""TTFT Planner: plan, measure and compare time-to-first-token for coding agents.

`planner` holds everything that computes or measures; it never imports streamlit.
"""

__version__ = "0.1.0"
