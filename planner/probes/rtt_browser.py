"""Browser-side RTT samples: validate what the Regions page's component sends back and turn it into rows.

The component (app/components/browser_rtt.js) measures in the user's browser; nothing it
returns is trusted blindly: each sample is checked (method, a plausible duration) and a
malformed one is rejected with a sentence, never stored.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from planner.probes.rtt_record import SampleRecord
from planner.regions.catalog import RttMethod

__all__ = ["BROWSER_METHODS", "records_from_browser"]

#: The methods the browser component measures with (what it sends, as stored).
BROWSER_METHODS: tuple[RttMethod, ...] = (RttMethod.RESOURCE_TIMING, RttMethod.FETCH_PERFORMANCE_NOW)


def _now_ms() -> int:
    return int(time.time() * 1000)


def records_from_browser(payload: dict[str, Any], vantage: str) -> tuple[list[SampleRecord], list[str]]:
    """Turn the browser component's result into sample rows (side='browser') stored with `vantage`.

    payload: {"run_id": str, "samples": [{region_id, url, method, rtt_ms, error_class, error_detail,
    measured_at_ms}, …]} as sent by app/components/browser_rtt.js. Returns (records, rejected), where
    rejected lists one sentence per malformed sample (nothing from the browser is trusted blindly).
    """
    records: list[SampleRecord] = []
    rejected: list[str] = []
    run_id = str(payload.get("run_id") or uuid.uuid4().hex)[:40]
    for i, s in enumerate(payload.get("samples") or []):
        try:
            method = str(s["method"])
            if method not in BROWSER_METHODS:
                raise ValueError(f"method {method!r} is not a browser method")
            rtt = s.get("rtt_ms")
            err = s.get("error_class")
            if err is None and (rtt is None or not 0 <= float(rtt) < 600_000):
                raise ValueError(f"rtt_ms {rtt!r} is not a duration in ms")
            records.append(
                SampleRecord(
                    region_id=str(s["region_id"])[:120],
                    target=str(s.get("url") or "")[:500],
                    side="browser",
                    method=RttMethod(method),
                    rtt_ms=None if rtt is None else float(rtt),
                    measured_at_ms=int(s.get("measured_at_ms") or _now_ms()),
                    vantage=vantage,
                    run_id=run_id,
                    error_class=None if err is None else str(err)[:40],
                    error_detail=None if s.get("error_detail") is None else str(s["error_detail"])[:500],
                )
            )
        except (KeyError, TypeError, ValueError) as exc:
            rejected.append(f"browser sample #{i + 1}: {exc}")
    return records, rejected
