"""The state one read_logs call shares across its files: options, the chosen mapping, derived-figure notes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from planner.logs.mapped import extract_mapped, guess_mapping
from planner.logs.prefix import PrefixCache
from planner.logs.records import Row
from planner.logs.result import LogParseResult
from planner.logs.splitting import Collector
from planner.logs.tokenize import TokenCounter
from planner.logs.traces import DEFAULT_START, PROFILES, match_profile, start_ms

__all__ = ["MAP_HINT_CLI", "MAP_HINT_PAGE", "TRACE_FORMATS", "ReadContext", "relative_times"]

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
    out: Collector
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

    def table_mapping(self, name: str, columns: Sequence[str]) -> tuple[str, dict[str, str]]:
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
