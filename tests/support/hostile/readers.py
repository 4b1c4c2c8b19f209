"""Every reader of outside data, by name: the kind of input it reads, the callable that gives it a case (case, Env,
deadline in s → its Outcomes), and which cases of that kind it has a place for. A new reader joins by one line here;
tests/planner/test_hostile_corpus.py feeds it every case of its kind."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tests.support.hostile.corpus import CORPUS, EXPORT, FILE, HTTP, ROW, Case
from tests.support.hostile.files import (
    endpoints_import,
    files_accepts,
    logs_read,
    logs_summarize,
    prefix_command,
    prefix_read,
    toml_accepts,
)
from tests.support.hostile.litellm import litellm_accepts, litellm_sync
from tests.support.hostile.otlp import otlp_accepts, otlp_metrics, otlp_traces
from tests.support.hostile.outcome import Env, Outcome
from tests.support.hostile.probe import error_accepts, probe_error_body, probe_stream, stream_accepts
from tests.support.hostile.prometheus import prometheus_accepts, prometheus_read

__all__ = ["READERS", "Reader", "pairs"]


@dataclass(frozen=True)
class Reader:
    kind: str
    read: Callable[[Case, Env, float], list[Outcome]]
    accepts: Callable[[Case], bool]


READERS: dict[str, Reader] = {
    "probe stream": Reader(HTTP, probe_stream, stream_accepts),
    "probe error body": Reader(HTTP, probe_error_body, error_accepts),
    "prometheus": Reader(HTTP, prometheus_read, prometheus_accepts),
    "otlp traces": Reader(EXPORT, otlp_traces, otlp_accepts),
    "otlp metrics": Reader(EXPORT, otlp_metrics, otlp_accepts),
    "litellm sync": Reader(ROW, litellm_sync, litellm_accepts),
    "logs read_logs": Reader(FILE, logs_read, files_accepts),
    "logs summarize": Reader(FILE, logs_summarize, files_accepts),
    "prefix read_prefix_trace": Reader(FILE, prefix_read, files_accepts),
    "prefix command": Reader(FILE, prefix_command, files_accepts),
    "endpoints import": Reader(FILE, endpoints_import, toml_accepts),
}


def pairs() -> list[tuple[str, Case]]:
    """(reader name, case) for every case each reader takes: of its kind, and one it has a place for."""
    return [(name, c) for name, r in READERS.items() for c in CORPUS if r.kind in c.kinds and r.accepts(c)]
