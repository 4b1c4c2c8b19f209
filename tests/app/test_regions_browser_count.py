"""AppTest: the Regions page's browser message counts what was measured and names the failures apart (issue 14)."""

from __future__ import annotations

import time

from streamlit.testing.v1 import AppTest

from planner.store import open_store
from planner.store.rtt import load_samples
from tests.app.conftest import open_page


def _sample(region: str, rtt: float | None, error: str | None = None) -> dict:
    return {
        "region_id": region,
        "url": f"https://{region}.example/ping",
        "method": "fetch-performance-now",
        "rtt_ms": rtt,
        "error_class": error,
        "error_detail": None if error is None else "the browser blocked the request",
        "measured_at_ms": int(time.time() * 1000),
    }


def _run(samples: list[dict]) -> AppTest:
    at = open_page("regions")
    at.session_state["browser_rtt"] = {"result": {"run_id": "r1", "vantage": "Lab", "samples": samples}}
    at.run()
    assert not at.exception, at.exception
    return at


def test_failed_targets_are_not_counted_as_stored_samples():
    at = _run([_sample("aws-eu-west-1", 20.0 + i) for i in range(3)] + [_sample("gcp-europe-west4", None, "blocked")])
    assert at.success[0].value == "Stored 3 browser samples as “Lab”; 1 target(s) failed (blocked ×1)."
    stored = load_samples(open_store(), side="browser")
    assert len(stored) == 4 and stored["error_class"].notna().sum() == 1  # the failure is kept, with its class


def test_a_run_where_every_target_failed_is_an_error_not_a_success():
    at = _run([_sample("aws-eu-west-1", None, "blocked"), _sample("gcp-europe-west4", None, "timeout")])
    assert not at.success
    assert at.error[0].value.startswith("Stored 0 browser samples as “Lab”; 2 target(s) failed")
