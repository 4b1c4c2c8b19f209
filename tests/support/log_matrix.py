"""The log reader's defect matrix (issue 43): request logs with KNOWN truth, written independently of the reader.

A base table of n requests (arrival ts_ms, model, prompt, cached and output tokens, TTFT and duration in ms) is drawn
with numpy from a seed and held in DuckDB. Each format is written from it by DuckDB's own COPY:

  jsonl    OpenAI chat completions, one JSON object a line: `created` (epoch s), `model`, `usage.prompt_tokens`,
           `usage.prompt_tokens_details.cached_tokens`, `usage.completion_tokens`. The chat format carries no TTFT
           (planner/logs/openai.py reads none), so its TTFT truth is empty.
  csv      a gateway export with its own column names (log_matrix_bytes.GATEWAY_MAPPING, given as `--map`), times
           without a zone, nothing quoted
  rfc      RFC-4180 CSV with the names the reader maps by itself (timestamp, model, prompt_tokens, cached_tokens,
           completion_tokens, ttft_ms, duration_ms), model and note quoted, one model name holding a quote, a comma
           and a line break (BROKEN_MODEL, at row 2n/5)
  parquet  the same columns (times TIMESTAMPTZ); the packings plain / gz / zst are its codecs (none, gzip, zstd)

A `note` column (JSON key) the reader ignores carries random letters on the rows before the far slots when n is
small, so a defect placed far sits past PAD_TARGET_BYTES (past json_lines' 16 MiB scan window, DuckDB's 8 MB scan
splits, the 1 MiB and 64 KiB head samples) at any n; at 1 M rows the far slots (from row 4n/5) are past the readers'
row batches (262,144; 65,536) by themselves.

Each defect replaces a record's line in the written bytes (or the header, or the last line), then come the line ends
(CRLF: every LF, those inside quoted fields too, as an editor saving with CRLF writes them), the UTF-8 BOM and the
packing (.gz, .zst); for Parquet a defect is a value DuckDB writes. Each records what the truth becomes: the rows
left out, and the (line, reason pattern) that must be named. Lines are 1-based physical lines as an editor shows
them: the CSV header is line 1; a record holding a quoted line break spans two lines and is named by its first, as
planner/logs/csvfile.py documents; a Parquet row by its 1-based row number; a refused file by line 0. The figures
are DuckDB SQL (`quantile_disc`, nearest rank) over the base table minus those rows. Which cells run, and how a
reading is compared with a truth: log_matrix_cells. How the formats write a record: log_matrix_bytes.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.log_matrix_bytes import (
    GATEWAY_MAPPING,
    NAMES,
    QBREAK_SUFFIX,
    defect_record,
    edited,
    letters,
    packed,
    parquet_value,
)

__all__ = [
    "BROKEN_MODEL",
    "DEFAULT_ROWS",
    "DEFECTS",
    "FORMATS",
    "PACKINGS",
    "ROWS_ENV",
    "Cell",
    "LogMatrix",
    "Truth",
    "Written",
    "applies",
    "matrix_rows",
]

ROWS_ENV, DEFAULT_ROWS, SEED = "TTFT_PLANNER_MATRIX_ROWS", 3_000, 43
START_MS = 1_772_409_600_000  # 2026-03-02T00:00:00Z, a Monday
MODELS = ("gpt-4o-mini", "claude-sonnet-4-5", "llama-3.1-8b-instruct", "qwen2.5-coder-32b")
BROKEN_MODEL = 'ft:gpt-4o-mini "eu",\nbatch'  # a quote, a comma and a line break in one RFC-4180 field
PAD_TARGET_BYTES = 17 << 20
PACKINGS = ("plain", "gz", "zst")
FORMATS = ("jsonl", "csv", "rfc", "parquet")
_TEXT_SUFFIX = {"jsonl": ".jsonl", "csv": ".csv", "rfc": ".csv", "parquet": ".parquet"}
_PACKED_SUFFIX = {"plain": "", "gz": ".gz", "zst": ".zst"}
_PARQUET_CODEC = {"plain": "uncompressed", "gz": "gzip", "zst": "zstd"}
_PS = (0.5, 0.9, 0.95, 0.99)
_TEXT = frozenset({"jsonl", "csv", "rfc"})

# Each defect and the formats it applies to; the order is the slot order (each defect its own early and far row).
DEFECTS: dict[str, frozenset[str]] = {
    "malformed": _TEXT,  # not JSON / a wrong field count, in place of a record's line
    "cut_tail": _TEXT,  # the last line cut off mid-way, no line end
    "text_count": frozenset(FORMATS),  # prompt tokens "12a" (Parquet: the column stored as text)
    "negative": frozenset(FORMATS),  # output tokens -7
    "year_2999": frozenset(FORMATS),  # an arrival on 2999-01-01
    "big_count": frozenset(FORMATS),  # prompt tokens over int64 (Parquet: 2^60, over 2^53)
    "inf_ttft": frozenset({"csv", "rfc", "parquet"}),  # TTFT Infinity
    "nan_ttft": frozenset({"csv", "rfc", "parquet"}),  # TTFT NaN
    "qbreak": frozenset({"csv", "rfc"}),  # a model name holding a quoted line break: read, the lines after shift
    "huge": _TEXT,  # a 20 MiB field
    "huge_xl": _TEXT,  # a 33 MiB CSV field, a 41 MiB JSON line
    "dup_column": frozenset({"csv", "rfc", "parquet"}),  # the prompt-token column named twice: the file refused
}
_ORDER = {name: k for k, name in enumerate(DEFECTS)}


def matrix_rows() -> int:
    """The base table's size: TTFT_PLANNER_MATRIX_ROWS, else DEFAULT_ROWS (at least 200)."""
    return max(200, int(os.environ.get(ROWS_ENV) or DEFAULT_ROWS))


@dataclass(frozen=True)
class Cell:
    """One cell of the matrix: a format, its defects, and how the bytes are written (far: the defects past the
    readers' chunk sizes, else among the first rows)."""

    fmt: str
    defects: tuple[str, ...] = ()
    crlf: bool = False
    bom: bool = False
    packing: str = "plain"
    far: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "defects", tuple(sorted(set(self.defects), key=_ORDER.__getitem__)))

    @property
    def id(self) -> str:
        what = "+".join(self.defects) or "clean"
        text = "" if self.fmt == "parquet" else f"-{'crlf' if self.crlf else 'lf'}{'-bom' if self.bom else ''}"
        return f"{self.fmt}-{what}{text}-{self.packing}-{'far' if self.far else 'early'}"

    @property
    def file_name(self) -> str:
        packed_suffix = "" if self.fmt == "parquet" else _PACKED_SUFFIX[self.packing]
        return self.id + _TEXT_SUFFIX[self.fmt] + packed_suffix


def applies(cell: Cell) -> bool:
    """Whether every part of the cell means something for its format (no CRLF, BOM or line defect for Parquet)."""
    if cell.fmt == "parquet" and (cell.crlf or cell.bom):
        return False
    return all(cell.fmt in DEFECTS[d] for d in cell.defects)


@dataclass(frozen=True)
class Truth:
    """What a reader must make of a cell's file: the figures of the rows it must read, and the lines it must name.

    Percentiles are {"p50", "p90", "p95", "p99", "max"} → value (None when no row has the field); the cache shares
    are None when no request has a cached token. named holds (line, pattern the reason must match, a regular
    expression taken without case) in line order; refused: the whole file is refused (named at line 0).
    """

    n: int
    first_ts_ms: int | None
    last_ts_ms: int | None
    prompt: dict[str, float | None]
    output: dict[str, float | None]
    ttft: dict[str, float | None]
    ttft_n: int
    token_fraction: float | None
    request_fraction: float | None
    models: dict[str, int]
    named: tuple[tuple[int, str], ...]
    refused: bool = False


@dataclass(frozen=True)
class Written:
    """A cell's file on disk, the mapping to read it with (None: the reader maps the columns), and its truth."""

    path: Path
    mapping: dict[str, str] | None
    truth: Truth


@dataclass
class _Plan:
    """A cell's defects: the base file's lines edited, and what the truth becomes."""

    edits: dict[int, tuple[bytes, bool]] = field(default_factory=dict)  # base line → (text, a line end follows)
    left_out: dict[int, str] = field(default_factory=dict)  # row → the pattern of the reason naming it
    breaks: dict[int, int] = field(default_factory=dict)  # row → line breaks inside its record
    models: dict[int, str] = field(default_factory=dict)  # row → its model name as the file writes it
    refused: str | None = None  # the pattern of the reason refusing the file


class LogMatrix:
    """The base table in DuckDB and the cells written from it into `folder` (each once, then reused)."""

    def __init__(self, folder: Path, rows: int | None = None, seed: int = SEED) -> None:
        import duckdb

        self.folder, self.n, self.seed = folder, rows or matrix_rows(), seed
        self.far0 = self.n * 4 // 5  # the first far slot
        self.broken_row = self.n * 2 // 5
        self.con = duckdb.connect()
        self.con.execute("SET TimeZone = 'UTC'")
        self.con.register("_drawn", self._draw())
        self.con.execute("CREATE TABLE base AS SELECT * FROM _drawn")
        self.con.unregister("_drawn")
        self._bases: dict[tuple[str, bool], Path] = {}
        self._cells: dict[Cell, Written] = {}

    def _draw(self) -> Any:
        """The requests as an Arrow table: i, ts_ms, created_s, model, prompt, cached, output, ttft_ms, duration_ms,
        and pad (random letters on the rows before the far slots when n is small, else '')."""
        import numpy as np
        import pyarrow as pa

        rng = np.random.default_rng(self.seed)
        n = self.n
        ts_ms = START_MS + np.cumsum(rng.exponential(900.0, n)).astype(np.int64)
        model = np.asarray(MODELS, dtype=object)[rng.choice(len(MODELS), n, p=[0.4, 0.3, 0.2, 0.1])]
        prompt = np.clip(rng.lognormal(np.log(2000), 1.0, n), 1, 200_000).astype(np.int64)
        cached = np.where(rng.random(n) < 0.6, (prompt * rng.uniform(0, 0.9, n)).astype(np.int64), 0)
        output = np.clip(rng.lognormal(np.log(200), 0.8, n), 1, 16_000).astype(np.int64)
        ttft_tenths = np.clip(rng.lognormal(np.log(4000), 0.5, n), 1, 10**6).astype(np.int64)
        duration_tenths = ttft_tenths + output * rng.integers(100, 400, n)
        pad_len = max(0, -(-PAD_TARGET_BYTES // self.far0) - 60)  # ~60 bytes a row without it
        offsets = np.zeros(n + 1, dtype=np.int64)
        offsets[1 : self.far0 + 1] = np.arange(1, self.far0 + 1) * pad_len
        offsets[self.far0 + 1 :] = offsets[self.far0]
        pad = pa.LargeStringArray.from_buffers(
            n, pa.py_buffer(offsets.tobytes()), pa.py_buffer(letters(int(offsets[-1]), self.seed))
        )
        return pa.table(
            {
                "i": np.arange(n, dtype=np.int64),
                "ts_ms": ts_ms,
                "created_s": ts_ms // 1000,
                "model": pa.array(model, pa.string()),
                "prompt": prompt,
                "cached": cached,
                "output": output,
                "ttft_ms": ttft_tenths / 10.0,  # a correctly rounded decimal: its text reads back as the same double
                "duration_ms": duration_tenths / 10.0,
                "pad": pad,
            }
        )

    def write(self, cell: Cell) -> Written:
        """The cell's file (written once into the folder), the mapping to read it with, and its truth."""
        if not applies(cell):
            raise ValueError(f"{cell.id}: a defect or variant that does not apply to {cell.fmt}")
        if cell not in self._cells:
            path = self.folder / cell.file_name
            if cell.fmt == "parquet":
                plan = self._write_parquet(cell, path)
            else:
                plan = self._plan(cell)
                with packed(path, cell.packing) as out, open(self._base_file(cell.fmt, cell.far), "rb") as fh:
                    out.write(b"\xef\xbb\xbf" if cell.bom else b"")
                    for chunk in edited(fh, plan.edits):
                        out.write(chunk.replace(b"\n", b"\r\n") if cell.crlf else chunk)
            mapping = dict(GATEWAY_MAPPING) if cell.fmt == "csv" else None
            self._cells[cell] = Written(path, mapping, self._truth(cell, plan))
        return self._cells[cell]

    def slot(self, defect: str, far: bool) -> int:
        """The row a defect is placed on: a row of its own among the first ones, or past the far mark."""
        k = _ORDER[defect]
        return self.far0 + 2 * k + 1 if far else 3 + 2 * k

    def _base_file(self, fmt: str, padded: bool) -> Path:
        """The text format written whole by DuckDB's COPY, LF line ends (made once)."""
        if (fmt, padded) not in self._bases:
            path = self.folder / f"base-{fmt}-{'padded' if padded else 'plain'}{_TEXT_SUFFIX[fmt]}"
            note = "pad" if padded else "''"
            if fmt == "jsonl":
                usage = (
                    "{'prompt_tokens': prompt, 'completion_tokens': output, "
                    "'prompt_tokens_details': {'cached_tokens': cached}}"
                )
                select = (
                    f"SELECT 'chat.completion' AS object, created_s AS created, model, {usage} AS usage, {note} AS note"
                )
                options = "FORMAT json"
            else:
                n = NAMES[fmt]
                when = "%Y-%m-%d %H:%M:%S.%g" if fmt == "csv" else "%Y-%m-%dT%H:%M:%S.%gZ"
                model = "model" if fmt == "csv" else f"CASE WHEN i = {self.broken_row} THEN $broken ELSE model END"
                select = (
                    f"""SELECT strftime(epoch_ms(ts_ms), '{when}') AS "{n["ts"]}", {model} AS "{n["model"]}", """
                    f"""prompt AS "{n["prompt_tokens"]}", cached AS "{n["cached_tokens"]}", """
                    f"""output AS "{n["output_tokens"]}", ttft_ms AS "{n["ttft_ms"]}", """
                    f"""duration_ms AS "{n["duration_ms"]}", {note} AS note"""
                )
                options = "FORMAT csv, HEADER true" + (", FORCE_QUOTE (model, note)" if fmt == "rfc" else "")
            params = {"broken": BROKEN_MODEL} if fmt == "rfc" else {}
            self.con.execute(f"COPY ({select} FROM base ORDER BY i) TO '{path}' ({options})", params)
            self._bases[fmt, padded] = path
        return self._bases[fmt, padded]

    def _plan(self, cell: Cell) -> _Plan:
        """A text cell's edits of its base file's lines, and what its truth becomes."""
        plan = _Plan()
        fmt = cell.fmt
        if fmt == "rfc":
            plan.breaks[self.broken_row] = 1
            plan.models[self.broken_row] = BROKEN_MODEL
        for defect in cell.defects:
            if defect == "dup_column":  # the note column renamed as the prompt-token column
                column = NAMES[fmt]["prompt_tokens"]
                with open(self._base_file(fmt, cell.far), "rb") as fh:
                    header = fh.readline().rstrip(b"\n")
                for note in (b",note", b',"note"'):
                    header = header.replace(note, b"," + column.encode())
                plan.edits[0] = (header, True)
                plan.refused = rf"(repeated|duplicate|twice).*{re.escape(column)}"
                continue
            row = self.n - 1 if defect == "cut_tail" else self.slot(defect, cell.far)
            cur = self.con.execute("SELECT * FROM base WHERE i = $i", {"i": row})
            columns = [d[0] for d in cur.description or ()]
            values = dict(zip(columns, cur.fetchall()[0], strict=True))
            text, keep_end, why = defect_record(fmt, defect, values, self.seed + row)
            base_line = (0 if fmt == "jsonl" else 1) + row + int(fmt == "rfc" and row > self.broken_row)
            plan.edits[base_line] = (text, keep_end)
            if defect == "qbreak":
                plan.breaks[row] = 1
                plan.models[row] = values["model"] + QBREAK_SUFFIX
            if why is not None:
                plan.left_out[row] = why
        return plan

    def _write_parquet(self, cell: Cell, path: Path) -> _Plan:
        """The Parquet cell by DuckDB's COPY, each defect a value of its row (a repeated column name by pyarrow:
        DuckDB's COPY renames a repeated name)."""
        plan = _Plan()
        text = "text_count" in cell.defects  # the prompt-token column stored as text
        base = {
            "timestamp": "epoch_ms(ts_ms)::TIMESTAMPTZ",
            "prompt_tokens": "prompt::VARCHAR" if text else "prompt",
            "completion_tokens": "output",
            "ttft_ms": "ttft_ms",
        }
        arms: dict[str, list[str]] = {c: [] for c in base}
        for defect in cell.defects:
            if defect == "dup_column":
                plan.refused = r"(repeated|duplicate|twice).*prompt_tokens"
                continue
            row = self.slot(defect, cell.far)
            col, value, why = parquet_value(defect)
            arms[col].append(f"WHEN i = {row} THEN ({value}){'::VARCHAR' if col == 'prompt_tokens' and text else ''}")
            plan.left_out[row] = why
        cols = {c: f"CASE {' '.join(arms[c])} ELSE {e} END" if arms[c] else e for c, e in base.items()}
        select = (
            f"SELECT {cols['timestamp']} AS timestamp, model, {cols['prompt_tokens']} AS prompt_tokens, "
            f"cached AS cached_tokens, {cols['completion_tokens']} AS completion_tokens, {cols['ttft_ms']} AS ttft_ms, "
            "duration_ms FROM base ORDER BY i"
        )
        codec = _PARQUET_CODEC[cell.packing]
        if plan.refused is None:
            self.con.execute(f"COPY ({select}) TO '{path}' (FORMAT parquet, COMPRESSION {codec})")
            return plan
        import pyarrow.parquet as pq

        table = self.con.sql(select).to_arrow_table()
        table = table.append_column("prompt_tokens", table.column("prompt_tokens"))
        pq.write_table(table, path, compression="none" if codec == "uncompressed" else codec)
        return plan

    def _truth(self, cell: Cell, plan: _Plan) -> Truth:
        """The figures of the rows the reader must read (DuckDB over the base table), and the lines it must name."""
        if plan.refused is not None:
            none = dict.fromkeys(("p50", "p90", "p95", "p99", "max"))
            return Truth(0, None, None, none, none, none, 0, None, None, {}, ((0, plan.refused),), refused=True)
        names = {r: (m.replace("\n", "\r\n") if cell.crlf else m) for r, m in plan.models.items()}
        ts = "created_s * 1000" if cell.fmt == "jsonl" else "ts_ms"
        ttft = "NULL::DOUBLE" if cell.fmt == "jsonl" else "ttft_ms"
        self.con.execute(
            f"""CREATE OR REPLACE TEMP TABLE kept AS
            SELECT {ts} AS ts, coalesce(o.name, b.model) AS model, prompt, cached, output, {ttft} AS ttft
            FROM base b LEFT JOIN (SELECT unnest($rows) AS i, unnest($names) AS name) o USING (i)
            WHERE b.i NOT IN (SELECT unnest($out))""",
            {"rows": [-1, *names], "names": ["", *names.values()], "out": [-1, *plan.left_out]},
        )
        levels = "[" + ", ".join(map(str, _PS)) + "]"
        got = self.con.execute(
            f"""SELECT count(*), min(ts), max(ts), quantile_disc(prompt, {levels}), max(prompt),
                quantile_disc(output, {levels}), max(output), quantile_disc(ttft, {levels}), max(ttft), count(ttft),
                sum(cached), sum(prompt), count(*) FILTER (WHERE cached > 0) FROM kept"""
        ).fetchall()[0]
        n, first, last, prompt_q, prompt_max, output_q, output_max, ttft_q, ttft_max, ttft_n, cached, total, hits = got
        models = dict(self.con.execute("SELECT model, count(*) FROM kept GROUP BY model").fetchall())
        header = 0 if cell.fmt in ("jsonl", "parquet") else 1
        named = sorted(
            (header + row + 1 + sum(k for r, k in plan.breaks.items() if r < row), why)
            for row, why in plan.left_out.items()
        )
        return Truth(
            n=n,
            first_ts_ms=first,
            last_ts_ms=last,
            prompt=_pcts(prompt_q, prompt_max),
            output=_pcts(output_q, output_max),
            ttft=_pcts(ttft_q, ttft_max),
            ttft_n=ttft_n,
            token_fraction=float(cached) / float(total) if hits and total else None,
            request_fraction=hits / n if hits else None,
            models=models,
            named=tuple(named),
        )


def _pcts(levels: list | None, top: Any) -> dict[str, float | None]:
    values = list(levels) if levels is not None else [None] * len(_PS)
    out = {f"p{round(p * 100)}": None if x is None else float(x) for p, x in zip(_PS, values, strict=True)}
    out["max"] = None if top is None else float(top)
    return out
