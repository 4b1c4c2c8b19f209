"""Stored load sweeps (`ttft-planner sweep --store`): the runs, newest first, and each run's steps in load order.

The public surface the Load sweep page uses; the tables and SQL are planner.store.sweeps'. Loads in requests/s or
concurrent requests (the run's mode), TTFT in ms. The store's errors pass through.
"""

from __future__ import annotations

from planner.store.sweeps import load_sweep_runs, load_sweep_steps

__all__ = ["load_sweep_runs", "load_sweep_steps"]
