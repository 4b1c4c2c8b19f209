"""Request logs → a normalised request frame, summaries, traffic shape and cold-start exposure.

The public surface other modules use: `read_logs` (files → LogParseResult), `LogFormatError`,
`RejectedLine`, and `summarize` (a log's requests → the one LogSummary the Logs page and `logs summarize` show,
computed by DuckDB in planner.logs.summary_sql; its vocabulary in planner.logs.summary); cold-start exposure in
planner.logs.exposure.
Prompt and completion text never leave the readers: the frame holds only times, counts and model names.
"""

from planner.logs.formats import FORMATS
from planner.logs.inputs import LOG_SUFFIXES
from planner.logs.opening import DEFAULT_MAX_BYTES
from planner.logs.read import ReaderPolicy, read_logs
from planner.logs.records import RejectedLine
from planner.logs.result import COLUMNS, LogFormatError, LogParseResult, empty_frame
from planner.logs.summary_sql import summarize
from planner.logs.tokenize import TokenCounter

__all__ = [
    "COLUMNS",
    "UPLOAD_EXTENSIONS",
    "DEFAULT_MAX_BYTES",
    "FORMATS",
    "LogFormatError",
    "LogParseResult",
    "ReaderPolicy",
    "RejectedLine",
    "TokenCounter",
    "empty_frame",
    "read_logs",
    "summarize",
]

# File name endings the upload widgets accept: the same as the command line's (the readers sniff the content).
UPLOAD_EXTENSIONS = tuple(s.removeprefix(".") for s in LOG_SUFFIXES)
