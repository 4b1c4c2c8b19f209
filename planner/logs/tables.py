"""Tables: CSV (row by row, or streamed through DuckDB when large) and Parquet (by batches), under a column mapping.

A TablePlan is how `logs import` streams a large CSV or a plain Parquet file into the store, a batch at a
time; read_logs reads the same batches (so both store the same rows) and keeps them.

Over 400 lines: CSV and Parquet under one column mapping, the small row-by-row path and the plans that stream large
files share the mapping checks and the row builder.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from planner.lazy import lazy_module
from planner.logs.columnar import batch_frame, batch_rows
from planner.logs.context import MAP_HINT_CLI, TRACE_FORMATS, ReadContext, relative_times
from planner.logs.csvfile import delimiter_of, fields, read_rows, record_lines
from planner.logs.duckpath import Doubt, iter_mapped_csv, sample_head
from planner.logs.formats import EXTRACTORS, classify
from planner.logs.gateways import Skip
from planner.logs.mapped import mapping_complete
from planner.logs.records import Reject, Row
from planner.logs.result import rows_frame
from planner.logs.splitting import Collector, decode_bom

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
else:  # imported on first use: `logs summarize` reads through DuckDB alone
    np, pd = lazy_module("numpy"), lazy_module("pandas")

__all__ = [
    "LARGE_CSV_BYTES",
    "TablePlan",
    "file_size",
    "large_csv_plan",
    "parquet_plan",
    "read_csv",
    "read_large_csv",
    "read_parquet",
    "read_record_csv",
    "wanted_column",
]

_PARQUET_BATCH_ROWS = 65_536


def file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _wrong_width(n: int, width: int) -> str:
    """Why a CSV record of n fields under a header of `width` is rejected."""
    hint = " (a field with the delimiter or a line break needs double quotes)" if n > width else ""
    return f"has {n} field{'' if n == 1 else 's'}, the header has {width}{hint}"


def _csv_records(name: str, header: list[str], rows, extract, ctx: ReadContext) -> None:
    """CSV rows of a known record format (its columns named as in its JSON export), one record each."""
    out = ctx.out
    width = len(header)
    for line_no, values in rows:
        if isinstance(values, str):
            out.reject(name, line_no, values)
            continue
        if len(values) != width:
            out.reject(name, line_no, _wrong_width(len(values), width))
            continue
        try:
            row = extract(dict(zip(header, values, strict=False)), ctx.tz)
        except Skip:
            out.n_skipped += 1
            continue
        except Reject as exc:
            out.reject(name, line_no, str(exc))
            continue
        out.add(row, name)


def read_csv(name: str, data: bytes, ctx: ReadContext) -> None:
    out, res = ctx.out, ctx.res
    header, rows = read_rows(data, out.tick)
    if not header:
        out.reject(name, 0, "empty file")
        return
    res.columns[name] = header
    record_fmt = ctx.fmt if ctx.fmt in EXTRACTORS else None
    if ctx.fmt == "auto" and not ctx.mapping:
        record_fmt = classify(dict.fromkeys(header, "")) if classify(dict.fromkeys(header, "")) in EXTRACTORS else None
    if record_fmt is not None:  # e.g. a LiteLLM spend-log export saved as CSV
        res.formats[name] = record_fmt
        _csv_records(name, header, rows, EXTRACTORS[record_fmt], ctx)
        return
    mapped = _mapped_table(name, header, ctx, "csv")
    if mapped is None:
        return
    fmt_name, used = mapped
    ts0 = ctx.start_ms() if relative_times(used) else 0
    prefix = ctx.prefix(used)
    no_output = 0
    seen = out.n_rejected + out.n_rows
    for line_no, values in rows:
        row = _table_row(name, line_no, values, header, used, ctx, ts0, prefix)
        if row is not None:
            no_output += row.output_tokens == 0
            out.add(row, name)
    if out.n_rejected + out.n_rows == seen:
        out.reject(name, 0, f"a header ({', '.join(header[:6])}{' …' if len(header) > 6 else ''}) and no rows")
    if fmt_name == "burstgpt" and no_output:
        res.notes.append(
            f"{name}: {no_output:,} request{'' if no_output == 1 else 's'} with 0 response tokens "
            "(failed, in BurstGPT's convention) are kept as arrivals"
        )


def _table_row(
    name: str,
    line_no: int,
    values: list[str] | str,
    header: list[str],
    used: Mapping[str, str],
    ctx: ReadContext,
    ts0: int,
    prefix,
) -> Row | None:
    """The row one CSV record makes under the mapping, or None having named it (values: fields, or a reason)."""
    out = ctx.out
    if isinstance(values, str):
        out.reject(name, line_no, values)
        return None
    width = len(header)
    if len(values) != width:
        out.reject(name, line_no, _wrong_width(len(values), width))
        return None
    try:
        return ctx.extract(dict(zip(header, values, strict=False)), used, dict.get, ts0, prefix)
    except Reject as exc:
        out.reject(name, line_no, str(exc))
        return None


LARGE_CSV_BYTES = 0  # CSV files on disk from this (decompressed) size go through DuckDB: all (tests raise it)


@dataclass(frozen=True)
class TablePlan:
    """How a large CSV or a plain Parquet file is read a batch at a time: its format name and column mapping."""

    path: Path
    fmt_name: str
    header: list[str]
    used: dict[str, str]
    tz: str
    start_ms: int
    delimiter: str = ""  # CSV only, which is how a plan tells CSV from Parquet

    @property
    def format(self) -> str:
        """The format read_logs reports for the file."""
        plain = "parquet" if not self.delimiter else "csv"
        return plain if self.fmt_name == "mapped" else self.fmt_name

    def frames(self, tick: Callable[[float], None] | None = None) -> Iterator[pd.DataFrame]:
        """The file's normalised frames in file order, one batch held at a time.

        Raises Doubt (possibly after some frames) when a batch needs the row-by-row reader.
        """
        if self.delimiter:
            refused: list[int] = []
            for frame, left in self.csv_batches(tick, refused):
                if left.size:
                    raise Doubt(f"row {int(left[0]) + 1} needs the row-by-row reader")
                yield frame
            if refused:
                raise Doubt(f"line {refused[0]} needs the row-by-row reader")
            return
        import pyarrow.parquet as pq

        pf = pq.ParquetFile(self.path)
        done_rows, total_rows = 0, max(pf.metadata.num_rows, 1)
        for batch in pf.iter_batches(batch_size=_PARQUET_BATCH_ROWS, columns=sorted(set(self.used.values()))):
            frame = batch_frame(batch, self.used, self.tz, self.start_ms, self.path.name)
            if frame is None:
                raise Doubt("a batch that needs the row-by-row reader")
            done_rows += batch.num_rows
            if tick is not None:
                tick(done_rows / total_rows)
            yield frame

    def csv_batches(
        self, tick: Callable[[float], None] | None, refused: list[int]
    ) -> Iterator[tuple[pd.DataFrame, np.ndarray]]:
        """A CSV plan's (good rows, places of the rows left for the row path) a batch at a time; see iter_mapped_csv."""
        return iter_mapped_csv(
            self.path, self.header, self.delimiter, self.used, self.tz, self.start_ms, self.path.name, tick, refused
        )


def parquet_plan(path: Path, ctx: ReadContext) -> TablePlan | None:
    """The plan for a Parquet file whose columns map plainly (no hash_ids to replay), or None."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        columns = list(pq.ParquetFile(path).schema_arrow.names)
    except (pa.ArrowInvalid, OSError):
        return None
    fmt_name, used = ctx.table_mapping(path.name, columns)
    if _mapping_problem(used, columns, "parquet") is not None or ctx.prefix(used) is not None:
        return None
    ts0 = ctx.start_ms() if relative_times(used) else 0
    return TablePlan(path, fmt_name, columns, used, ctx.tz, ts0)


def read_record_csv(path: Path, ctx: ReadContext) -> bool:
    """A CSV file on disk of a record format (a LiteLLM spend-log export: JSON in its cells), streamed record by
    record through that format's reader, in bounded memory and under no size cap; False when it is not one."""
    if ctx.fmt not in ("auto", *EXTRACTORS) or ctx.mapping:
        return False
    try:
        head, _ = sample_head(path, 1 << 16)
    except (OSError, EOFError, ValueError):
        return False
    head = decode_bom(head)
    if not head.strip() or head.lstrip()[:1] in (b"{", b"["):
        return False
    header, _ = read_rows(head)
    fmt = ctx.fmt if ctx.fmt in EXTRACTORS else classify(dict.fromkeys(header, ""))
    if not header or fmt not in EXTRACTORS:
        return False
    delimiter = delimiter_of(head.decode("utf-8", "replace"))
    ctx.res.columns[path.name] = header
    ctx.res.formats[path.name] = fmt
    if fmt == "litellm" and ctx.out.sink is not None and (read := _engine_litellm(path, header, delimiter, ctx)):
        ctx.out.n_sunk += read.inserted
        _csv_records(path.name, header, read.named, EXTRACTORS[fmt], ctx)
        return True
    rows = ((line, fields(record, delimiter)) for line, _, record in record_lines(path, delimiter))
    _csv_records(path.name, header, rows, EXTRACTORS[fmt], ctx)
    return True


def _engine_litellm(path: Path, header: list[str], delimiter: str, ctx: ReadContext):
    """A LiteLLM spend-log CSV read into the sink's engine (planner.logs.sqlmap.litellm_select), or None."""
    from planner.logs.csvengine import RowSql
    from planner.logs.sqlmap import LITELLM_CASTS, LITELLM_COLUMNS, litellm_select

    got = litellm_select(set(header))
    if got is None or len(set(header)) != len(header):
        return None
    casts = {c: t for c, t in LITELLM_CASTS.items() if c in header}
    rows = RowSql(got, casts, tuple(c for c in LITELLM_COLUMNS if c in header))
    assert ctx.out.sink is not None
    return ctx.out.sink.insert_csv(path, header, delimiter, rows, ctx.tz)


def large_csv_plan(path: Path, ctx: ReadContext) -> TablePlan | None:
    """The plan for a CSV of at least LARGE_CSV_BYTES on disk under a plain mapping, or None (read it row by row)."""
    if ctx.fmt not in ("auto", "csv", *TRACE_FORMATS):
        return None
    try:
        head, size = sample_head(path, 1 << 16)
    except (OSError, EOFError, ValueError):
        return None
    if size < LARGE_CSV_BYTES:  # the decompressed size (estimated from the head) for .gz and .zst
        return None
    head = decode_bom(head)
    if not head.strip() or head.lstrip()[:1] in (b"{", b"["):
        return None
    header, _ = read_rows(head)
    if not header:
        return None
    if ctx.fmt == "auto" and not ctx.mapping and classify(dict.fromkeys(header, "")) in EXTRACTORS:
        return None
    fmt_name, used = ctx.table_mapping(path.name, header)
    if _mapping_problem(used, header, "csv") is not None or used.get("hash_ids"):
        return None
    ts0 = ctx.start_ms() if relative_times(used) else 0
    delimiter = delimiter_of(head.decode("utf-8", "replace"))
    return TablePlan(path, fmt_name, header, used, ctx.tz, ts0, delimiter)


def read_large_csv(path: Path, ctx: ReadContext) -> bool:
    """Read a large CSV with a plain mapping through DuckDB in bounded memory; False to read it row by row.

    The engine reads it in one pass when it can (_engine_csv). Otherwise DuckDB's batches come through Python and
    the rows it refuses or leaves out are read or named by the row reader in one streamed pass over the file (only
    when there are any), so one bad row costs one row, not the file.
    """
    plan = large_csv_plan(path, ctx)
    if plan is None:
        return False
    out = ctx.out
    mark = out.mark()
    if out.sink is not None and _engine_csv(plan, ctx):
        _table_read(plan.path.name, plan.header, plan.used, plan.format, out.sink.zero_output_since(mark[1]), ctx)
        return True
    if out.sink is None and _engine_frame(plan, ctx):
        return True
    rows_before = out.n_rows
    left: list[np.ndarray] = []
    refused: list[int] = []
    kept = zero = 0
    try:
        for frame, places in plan.csv_batches(out.tick, refused):
            out.add_frame(frame)  # each batch as it comes: held only when no sink takes it
            kept += len(frame) + places.size
            zero += int((frame["output_tokens"] == 0).sum())
            if places.size:
                left.append(places)
    except Doubt:
        out.rollback(mark)
        return False
    if left or refused:
        explained = Collector(rows_frame)
        wanted: set[int] = set(np.concatenate(left).tolist()) if left else set()
        if not _explain_rows(plan, wanted, set(refused), kept, ctx, explained):
            out.rollback(mark)
            return False  # DuckDB and the row reader disagree on where the rows are: read it row by row
        zero += _take(explained, out)
    if out.n_rows == rows_before:
        out.rollback(mark)
        return False
    _table_read(path.name, plan.header, plan.used, plan.format, zero, ctx)
    return True


def _take(explained: Collector, out: Collector) -> int:
    """Move the rows and rejections the row reader made of some lines into `out`; the rows with 0 output tokens."""
    explained.flush()
    zero = 0
    for frame in explained.frames:
        out.add_frame(frame)
        zero += int((frame["output_tokens"] == 0).sum())
    _take_rejections(explained, out)
    return zero


def _take_rejections(src: Collector, out: Collector) -> None:
    """Move the lines `src` rejected (the count, and the reasons it kept) into `out`."""
    for r in src.rejected:
        out.reject(r.source, r.line_no, r.reason)
    out.n_rejected += src.n_rejected - len(src.rejected)


def _table_read(
    name: str, columns: list[str], used: dict[str, str], fmt_name: str, zero: int, ctx: ReadContext
) -> None:
    """What the result says of a table read through DuckDB: its columns, mapping, format, BurstGPT's failed rows."""
    ctx.res.columns[name] = columns
    ctx.res.mapping = used
    ctx.res.formats[name] = (
        fmt_name if fmt_name != "mapped" else ("parquet" if name.lower().endswith(".parquet") else "csv")
    )
    if fmt_name == "burstgpt" and zero:
        ctx.res.notes.append(
            f"{name}: {zero:,} request{'' if zero == 1 else 's'} with 0 response tokens "
            "(failed, in BurstGPT's convention) are kept as arrivals"
        )


def _engine_csv(plan: TablePlan, ctx: ReadContext) -> bool:
    """Read a CSV file under a plain mapping into the sink's engine (planner.logs.csvengine); False (nothing kept)
    when the mapping is not a plain case for SQL or the engine cannot place the lines it leaves.

    The lines it leaves are read or named here by the row reader, as reading the file row by row would."""
    from planner.logs.csvengine import RowSql
    from planner.logs.duckpath import column_types
    from planner.logs.sqlmap import mapped_select

    out = ctx.out
    assert out.sink is not None
    types = column_types(plan.path, plan.header, plan.delimiter, plan.used)
    got = mapped_select(plan.used, {c: _SQL_TYPE.get(t, t) for c, t in types.items()}, plan.start_ms)
    if got is None:
        return False
    rows = RowSql(got, {c: t for c, t in types.items() if t != "VARCHAR"}, tuple(types))
    mark, rows_before = out.mark(), out.n_rows
    read = out.sink.insert_csv(plan.path, plan.header, plan.delimiter, rows, plan.tz)
    if read is None:
        return False
    out.n_sunk += read.inserted
    explained = Collector(rows_frame)
    row_ctx = ReadContext(ctx.fmt, ctx.mapping, ctx.tz, ctx.counter, ctx.start, ctx.cache_blocks, explained, ctx.res)
    prefix = row_ctx.prefix(plan.used)
    name = plan.path.name
    for line_no, values in read.named:
        row = _table_row(name, line_no, values, plan.header, plan.used, row_ctx, plan.start_ms, prefix)
        if row is not None:
            explained.add(row, name)
    _take(explained, out)
    if out.n_rows == rows_before:
        out.rollback(mark)
        return False
    return True


def _engine_frame(plan: TablePlan, ctx: ReadContext) -> bool:
    """Read a CSV file through a private engine table (_engine_csv) and keep its rows as a frame (by arrival) for a
    caller without a sink (the dashboard): a bad line costs it a line too. False (nothing kept) as _engine_csv."""
    from dataclasses import replace

    from planner.logs.request_table import RequestTable, connect

    con = connect(keep_order=True)
    try:
        table = RequestTable(con)
        inner = Collector(rows_frame, sink=table)
        if not _engine_csv(plan, replace(ctx, out=inner)):
            return False
        frame = table.frame()
    finally:
        con.close()
    frame["source"] = pd.array([plan.path.name] * len(frame), dtype=object)
    out = ctx.out
    out.add_frame(frame)
    _take_rejections(inner, out)
    zero = int((frame["output_tokens"] == 0).sum())
    _table_read(plan.path.name, plan.header, plan.used, plan.format, zero, ctx)
    return True


_SQL_TYPE = {"TIMESTAMPTZ": "TIMESTAMP WITH TIME ZONE"}  # as DESCRIBE names the types planner.logs.sqlmap reads


def _explain_rows(
    plan: TablePlan, places: set[int], refused: set[int], kept: int, ctx: ReadContext, out: Collector
) -> bool:
    """Stream the CSV once through the row reader, reading or naming the records DuckDB left: those on a `refused`
    line (DuckDB's numbering, which does not count line breaks inside quoted fields), and those at `places` among
    the ones it kept (of which there were `kept`).

    False when the row reader finds another number of kept records (DuckDB split the file otherwise).
    """
    name = plan.path.name
    row_ctx = ReadContext(ctx.fmt, ctx.mapping, ctx.tz, ctx.counter, ctx.start, ctx.cache_blocks, out, ctx.res)
    prefix = row_ctx.prefix(plan.used)
    place = 0
    inner = 0  # line breaks inside quoted fields so far: DuckDB's line numbers do not count them
    for line_no, extra, record in record_lines(plan.path, plan.delimiter):
        refused_here = line_no - inner in refused
        inner += extra
        if refused_here or place in places:
            values = fields(record, plan.delimiter)
            row = _table_row(name, line_no, values, plan.header, plan.used, row_ctx, plan.start_ms, prefix)
            if row is not None:
                out.add(row, name)
        if not refused_here:
            place += 1
    return place == kept


def read_parquet(name: str, source: Path | bytes, ctx: ReadContext) -> None:
    """A Parquet file, read in batches of the mapped columns only (rows numbered from 1); a clean file on disk read
    into the sink by DuckDB alone (pyarrow is then not imported)."""
    out, res = ctx.out, ctx.res
    columns = out.sink.parquet_columns(source) if isinstance(source, Path) and out.sink is not None else None
    pf = None
    if columns is None:
        pf = _parquet_file(name, source, out)
        if pf is None:
            return
        columns = list(pf.schema_arrow.names)
    res.columns[name] = columns
    repeated = sorted({c for c in columns if columns.count(c) > 1})
    if repeated:  # which one a mapping means cannot be told (DuckDB would read one, pyarrow neither)
        out.reject(name, 0, f"a column name is repeated in the file ({', '.join(repeated)}): rename one")
        return
    mapped = _mapped_table(name, columns, ctx, "parquet")
    if mapped is None:
        return
    used = mapped[1]
    ts0 = ctx.start_ms() if relative_times(used) else 0
    prefix = ctx.prefix(used)
    if isinstance(source, Path) and out.sink is not None and prefix is None:
        mark = out.mark()
        try:  # a clean file, by DuckDB alone
            out.n_sunk += out.sink.insert_mapped("read_parquet($path)", {"path": str(source)}, used, ts0, ctx.tz)
        except Doubt:
            pass
        else:
            _table_read(name, columns, used, res.formats[name], out.sink.zero_output_since(mark[1]), ctx)
            return
    if pf is None:
        pf = _parquet_file(name, source, out)
        if pf is None:
            return
    get = dict.get
    row_no = 0
    done_rows, total_rows = 0, max(pf.metadata.num_rows, 1)
    for batch in pf.iter_batches(batch_size=_PARQUET_BATCH_ROWS, columns=sorted(set(used.values()))):
        if out.tick is not None:
            out.tick(done_rows / total_rows)
        done_rows += batch.num_rows
        got = batch_rows(batch, used, ctx.tz, ts0, name) if prefix is None else None
        if got is not None:  # the plain case, a batch at a time; the row path names the rows it left out
            out.add_frame(got[0])
            todo = [(row_no + 1 + int(i), rec) for i, rec in zip(got[1], batch.take(got[1]).to_pylist(), strict=True)]
        else:
            todo = list(enumerate(batch.to_pylist(), row_no + 1))
        row_no += batch.num_rows
        for at, rec in todo:
            for k, v in rec.items():  # Parquet timestamps arrive as datetimes: ISO text for epoch_ms
                if hasattr(v, "isoformat"):
                    rec[k] = v.isoformat()
            try:
                row = ctx.extract(rec, used, get, ts0, prefix)
            except Reject as exc:
                out.reject(name, at, str(exc))
                continue
            out.add(row, name)


def _parquet_file(name: str, source: Path | bytes, out: Collector):
    """The file opened by pyarrow (pyarrow.parquet.ParquetFile), or None having rejected it as unreadable."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(source if isinstance(source, Path) else pa.BufferReader(source))
    except (pa.ArrowInvalid, OSError) as exc:
        out.reject(name, 0, f"not a readable Parquet file ({exc})")
        return None


#: Where a table file's column names are, in the words of a message: a CSV's header, a Parquet file's schema.
_COLUMNS_IN = {"csv": "the header", "parquet": "the file"}


def _mapping_problem(
    used: Mapping[str, str], columns: Sequence[str], kind: str, hint: str = MAP_HINT_CLI
) -> str | None:
    """Why a table file (`kind`: "csv" or "parquet") with these columns cannot be read under the mapping `used`, or
    None when it can: a mapped column it lacks, or no time / prompt-token column (wanted_column)."""
    missing = [c for c in used.values() if c not in columns]
    if missing:
        return f"mapped column(s) not in {_COLUMNS_IN[kind]}: {', '.join(missing)}"
    if not mapping_complete(used):
        return wanted_column(used, columns, hint)
    return None


def _mapped_table(name: str, columns: Sequence[str], ctx: ReadContext, kind: str) -> tuple[str, dict[str, str]] | None:
    """(format name, mapping) of the table file `name` (`kind`: "csv" or "parquet"), both noted in ctx.res; None
    having rejected the file with its _mapping_problem."""
    fmt_name, used = ctx.table_mapping(name, columns)
    ctx.res.mapping = used
    ctx.res.formats[name] = kind if fmt_name == "mapped" else fmt_name
    problem = _mapping_problem(used, columns, kind, ctx.map_hint)
    if problem is not None:
        ctx.out.reject(name, 0, problem)
        return None
    return fmt_name, used


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
