"""Where each worksheet figure is measured: the guided first step a first-time visitor's worksheet shows.

Every segment and prefill input of the worksheet comes from one page (MEASURED_ON): queueing and the cold start from
Probes, the network from Regions, the prefill rate from Capacity & cost (Prefill tab), the p95 prompt and the
cache-hit rate from Logs. Until one figure of the worksheet is measured
(planner.worksheet.provenance.Figure.is_measured), `first_step` lists them all, so the page can link each to the page
that measures it; after that the figures carry their own provenance and the guide steps aside.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from planner.worksheet.provenance import Figure

__all__ = ["MEASURED_ON", "WhereMeasured", "first_step"]


@dataclass(frozen=True)
class WhereMeasured:
    """One worksheet field (`field`, e.g. "queue_ms"), the page that measures it (its url path and title) and how."""

    field: str
    label: str
    page: str
    page_title: str
    how: str


MEASURED_ON: tuple[WhereMeasured, ...] = (
    WhereMeasured(
        "queue_ms",
        "Admission / queueing",
        "probes",
        "Probes",
        "scheduled probes: the worst hour's p95 over the quietest hour's p50",
    ),
    WhereMeasured("cold_ms", "Weight loading (cold start)", "probes", "Probes", "a cold reading: cold − warm TTFT"),
    WhereMeasured("network_ms", "Network", "regions", "Regions", "round-trip time from your server and your browser"),
    WhereMeasured(
        "prefill_tokens_per_s",
        "Prefill rate",
        "capacity",
        "Capacity & cost",
        "the Prefill tab: a measured slope from probes, or the FLOPs model",
    ),
    WhereMeasured("prompt_tokens_p95", "p95 prompt", "logs", "Logs", "your request log's prompt tokens"),
    WhereMeasured(
        "cache_hit_fraction", "Prefix-cache hit rate", "logs", "Logs", "your request log's cached prompt tokens"
    ),
)


def first_step(figures: Mapping[str, Figure]) -> list[WhereMeasured]:
    """Where to measure each figure of a worksheet (`figures`: field → Figure), while none of them is measured yet;
    [] once one is (the guide is a first step, not a nag)."""
    if any(f.is_measured for f in figures.values()):
        return []
    return list(MEASURED_ON)
