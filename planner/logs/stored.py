"""The request logs the store holds, as the pages that read a log pick one: uploads saved from the Logs page, and
production sources that keep requests (a LiteLLM proxy, OpenTelemetry spans). Either opens as the same normalised
request frame (planner.logs COLUMNS, sorted by arrival).

The public surface the Capacity, What-if and Logs pages use (the Logs page also saves an upload and deletes one
here); the tables and SQL are planner.store.logs' and planner.store.sources'. log_frame raises UploadNotFound for an
unknown upload (an unknown source reads as no requests); the store's errors pass through.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from sqlalchemy.engine import Engine

from planner.store.logs import UploadInfo, UploadNotFound, delete_upload, list_uploads, load_upload_frame, save_upload
from planner.store.sources import SourceInfo, load_source_frame, request_sources

__all__ = [
    "SourceInfo",
    "StoredLogs",
    "UploadInfo",
    "UploadNotFound",
    "delete_upload",
    "log_frame",
    "save_upload",
    "stored_logs",
]


@dataclass(frozen=True)
class StoredLogs:
    """What a log picker offers: the uploads, newest first, and the sources holding at least one request."""

    uploads: list[UploadInfo]
    sources: list[SourceInfo]


def stored_logs(engine: Engine) -> StoredLogs:
    """Every stored upload and every source a log can be read from."""
    return StoredLogs(list_uploads(engine), request_sources(engine))


def log_frame(engine: Engine, *, upload_id: int | None = None, source_id: int | None = None) -> pd.DataFrame:
    """The requests of one upload or one source (give exactly one id) as a normalised request frame. Raises
    ValueError unless exactly one id is given, UploadNotFound for an unknown upload."""
    if (upload_id is None) == (source_id is None):
        raise ValueError("give an upload id or a source id, not both or neither")
    if source_id is not None:
        return load_source_frame(engine, source_id)
    assert upload_id is not None  # exactly one, checked above
    return load_upload_frame(engine, upload_id)
