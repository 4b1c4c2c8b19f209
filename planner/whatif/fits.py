"""The batching engines' step-model fits on record: what `calibrate --engine …` kept with each calibration (base URL,
model, when, the spec it printed, the StepFit as JSON), newest first, for the What-if page to show beside a batching
candidate (planner.whatif.describe.fit_words).

The public surface the page uses; the table and SQL are planner.store.calibrations'. Raises the store's errors only.
"""

from __future__ import annotations

from planner.store.calibrations import recent_fits

__all__ = ["recent_fits"]
