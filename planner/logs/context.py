"""What one read_logs call shares across its files: options, the chosen mapping, notes, and the mapping's checks.

`table_mapping` chooses a table's mapping (the user's, a public trace's, or a guess); `mapping_problem` says why a
file cannot be read under it, in the words of where the reader is (MAP_HINT_CLI, MAP_HINT_PAGE).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from planner.logs.mapped import extract_mapped, guess_mapping, mapping_complete
from planner.logs.prefix import PrefixCache
from planner.logs.records import Row
from planner.logs.result import LogParseResult
from planner.logs.tokenize import TokenCounter
from planner.logs.traces import DEFAULT_START, PROFILES, match_profile, start_ms

__all__ = [
    "MAP_HINT_CLI",
    "MAP_HINT_PAGE",
    "TRACE_FORMATS",
    "ReadContext",
    "mapping_problem",
    "relative_times",
    "wanted_column",
]

TRACE_FORMATS = tuple(p.name for p in PROFILES)
#: How a message tells the reader to name a column the reader did not find, in the words of where they are: the
#: command line's flag, or the Logs page's mapping box (read_logs(map_hint=…); the CLI's is the default).
MAP_HINT_CLI = "map it with --map FIELD=COLUMN"
MAP_HINT_PAGE = "choose it in the Column mapping box below"


@dataclass
class ReadContext:
    """What every file of one read_logs call shares."""

    fmt: str
    mapping: Mapping[str, str] | None
    tz: str
    counter: TokenCounter
    start: str | None
    cache_blocks: int
    res: LogParseResult
    map_hint: str = MAP_HINT_CLI  # how a missing-column message says to map it (MAP_HINT_CLI, MAP_HINT_PAGE)

    def start_ms(self) -> int:
        ms, defaulted = start_ms(self.start, self.tz)
        note = f"times are relative to the trace's start, placed from {self.start or DEFAULT_START} ({self.tz})" + (
            " — a default; set the start date" if defaulted else ""
        )
        if note not in self.res.notes:
            self.res.notes.append(note)
        return ms

    def prefix(self, mapping: Mapping[str, str]) -> PrefixCache | None:
        if not mapping.get("hash_ids") or mapping.get("cached_tokens"):
            return None
        cache = PrefixCache(self.cache_blocks)
        if cache.label() not in self.res.notes:
            self.res.notes.append(cache.label())
        return cache

    def table_mapping(self, columns: Sequence[str]) -> tuple[str, dict[str, str]]:
        """(format name, mapping) for a table's columns: the user's mapping, a public trace's, or a guess."""
        if self.fmt in TRACE_FORMATS:
            found = match_profile(columns)
            prof = next(p for p in PROFILES if p.name == self.fmt)
            used = found[1] if found and found[0].name == self.fmt else dict(prof.mapping)
            return self.fmt, used
        if self.mapping:
            return "mapped", dict(self.mapping)
        found = match_profile(columns)
        if found is not None:
            return found[0].name, found[1]
        return "mapped", guess_mapping(columns)

    def extract(self, rec: Mapping, mapping: Mapping[str, str], get, ts0: int, prefix: PrefixCache | None) -> Row:
        row, est = extract_mapped(rec, mapping, self.tz, self.counter, get=get, start_ms=ts0, prefix=prefix)
        self.res.tokens_estimated |= est
        return row


def relative_times(mapping: Mapping[str, str]) -> bool:
    return not mapping.get("ts") and any(mapping.get(k) for k in ("ts_relative_s", "ts_relative_ms"))


#: Where a table file's column names are, in the words of a message: a CSV's header, a Parquet file's schema.
_COLUMNS_IN = {"csv": "the header", "parquet": "the file", "json": "its records"}


def mapping_problem(used: Mapping[str, str], columns: Sequence[str], kind: str, hint: str = MAP_HINT_CLI) -> str | None:
    """Why a table file (`kind`: csv, parquet) with these columns cannot be read under the mapping `used`, or None
    when it can: a mapped column it lacks, or no time / prompt-token column (wanted_column)."""
    missing = [c for c in used.values() if c not in columns] if kind != "json" else []
    if missing:
        return f"mapped column(s) not in {_COLUMNS_IN[kind]}: {', '.join(missing)}"
    if not mapping_complete(used):
        return wanted_column(used, columns, hint)
    return None


def wanted_column(used: Mapping[str, str], columns: Sequence[str], hint: str = MAP_HINT_CLI) -> str:
    """One sentence: which column the reader looked for and did not find, the columns there are, and how to map it
    in the words of where the reader is (`hint`: MAP_HINT_CLI, the command line's flag; MAP_HINT_PAGE, the page's
    mapping box)."""
    shown = ", ".join(list(columns)[:12]) + (" …" if len(columns) > 12 else "") if columns else "none"
    if not any(used.get(k) for k in ("ts", "ts_relative_s", "ts_relative_ms")):
        want = "time column (e.g. timestamp, created_at, TIMESTAMP)"
    else:
        want = "prompt-token column (e.g. prompt_tokens, input_tokens, ContextTokens)"
    return f"no {want} among its fields ({shown}); {hint}"
