"""The readers of files: the log reader (planner.logs.read_logs, `ttft-planner logs summarize`), the prefix reader
(planner.kvcache.chains.read_prefix_trace, `ttft-planner prefix`) and the TOML import (`ttft-planner endpoints
import`).

Each reader has its good documents (`DOCUMENTS`: a JSON Lines log and a CSV log; a Mooncake trace and a chat trace;
an endpoints TOML): a value goes in every slot of a record (`*_SLOTS`), one record per slot, after the good records;
a time in every time slot, as ISO 8601 and as a number; a body is the whole file; a transform changes a good file. A
named pipe nobody writes is the file's black hole; a sparse file past the size cap its huge body; /dev/zero its endless
one; a .gz or .zst bomb its bombs. The library readers take a FILE_CAP_BYTES cap; the commands their own defaults.

A library call is READ when it returns sane figures (finite, non-negative, times from 1970 to 2100, the good records
read), REFUSED when it names rejected lines or raises one PlannerError line. A command is READ when it exits 0, and
REFUSED when it exits non-zero with its error on a line; an exception other than SystemExit is re-raised (a
traceback), and "Traceback" in its output is WRONG.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from planner.errors import PlannerError
from tests.support.hostile.corpus import HOLE, Case, cut_gzip, embed, gzip_bomb, json_text, zstd_bomb
from tests.support.hostile.outcome import READ, REFUSED, WRONG, Env, Outcome, one_line, sane_number

__all__ = [
    "FILE_CAP_BYTES",
    "endpoints_import",
    "files_accepts",
    "logs_read",
    "logs_summarize",
    "prefix_command",
    "prefix_read",
    "toml_accepts",
]

FILE_CAP_BYTES = 64 << 20  # the library readers' cap in these cases
HUGE_FILE_BYTES = 1536 << 20  # sparse: past every reader's cap, the log reader's 1 GiB default included
_T0_S = int(datetime(2026, 11, 16, 9, tzinfo=UTC).timestamp())
_NOW_S = _T0_S + 86_400
_H = HOLE
GOOD = 5


def files_accepts(case: Case) -> bool:
    return case.role not in ("echo", "dsn", "pasted")


def toml_accepts(case: Case) -> bool:
    return case.role not in ("echo", "dsn", "time")  # an endpoint has no time of its own


def _iso(epoch_s: float) -> str | None:
    try:
        return (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=epoch_s)).isoformat().replace("+00:00", "Z")
    except (OverflowError, ValueError):
        return None


# --- documents: each a function of the case (None: the good records alone) ------------------------------------------


def _log_record(i: int, **over: Any) -> dict[str, Any]:
    record = {"timestamp": _iso(_T0_S + i), "model": "m", "prompt_tokens": 1000 + i, "cached_tokens": 0}
    return record | {"completion_tokens": 20, "ttft_ms": 300.5} | over


def _mooncake(i: int, **over: Any) -> dict[str, Any]:
    return {"timestamp": 1000 * i, "input_length": 600, "output_length": 20, "hash_ids": [0, i + 1]} | over


def _chat(i: int, **over: Any) -> dict[str, Any]:
    messages = [{"role": "system", "content": "You are terse. " * 20}, {"role": "user", "content": f"question {i}"}]
    return {"timestamp": 1000 * i, "session_id": f"s{i % 2}", "messages": messages} | over


_LOG_SLOTS = ["timestamp", "model", "prompt_tokens", "cached_tokens", "completion_tokens", "ttft_ms"]
_MOONCAKE_SLOTS = ["timestamp", "input_length", "output_length", "hash_ids"]
_CHAT_SLOTS = ["timestamp", "messages", "session_id", "metadata"]


def _time_values(epoch_s: float) -> list[Any]:
    """A time as a record may hold it: ISO 8601 where its year can be written, and a number of ms."""
    iso = _iso(epoch_s)
    return ([iso] if iso else []) + [epoch_s * 1000]


def _hostile(make: Callable[..., dict[str, Any]], slots: list[str], case: Case | None) -> list[str]:
    """The JSON text of the case's records: a value in each slot and as a whole record; a time in each way of
    writing it."""
    if case is None:
        return []
    if case.role == "time":
        assert case.epoch_s is not None
        return [json.dumps(make(GOOD + k, timestamp=t)) for k, t in enumerate(_time_values(case.epoch_s))]
    if case.role == "value":
        every = [embed(make(GOOD + k, **{slot: _H}), case.value) for k, slot in enumerate(slots)]
        return [*every, embed(_H, case.value)]
    return []


def _jsonl(make: Callable[..., dict[str, Any]], slots: list[str]) -> Callable[[Case | None], bytes]:
    def document(case: Case | None) -> bytes:
        good = [json.dumps(make(i)) for i in range(GOOD)]
        records = [*good, *_hostile(make, slots, case), json.dumps(make(GOOD + 50))]
        return ("\n".join(records) + "\n").encode("utf-8", "surrogatepass")

    return document


def _cell(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else json_text(value)


def _log_csv(case: Case | None) -> bytes:
    columns = list(_log_record(0))
    rows = [_log_record(i) for i in range(GOOD)]
    if case is not None and case.role == "time":
        assert case.epoch_s is not None
        rows += [_log_record(GOOD + k, timestamp=t) for k, t in enumerate(_time_values(case.epoch_s))]
    elif case is not None and case.role == "value":
        rows += [_log_record(GOOD + k, **{column: case.value}) for k, column in enumerate(columns)]
    rows.append(_log_record(GOOD + 50))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([_cell(v) for v in row.values()] for row in rows)
    return out.getvalue().encode("utf-8", "surrogatepass")


_GOOD_TOML = {
    "provider": "openai",
    "region": "us-east",
    "base_url": "https://api.example.com/v1",
    "model": "m",
    "api_key_env": "OPENAI_API_KEY",
    "interval_s": 60.0,
    "timeout_s": 30.0,
    "prompt_tokens": 1000,
    "max_tokens": 16,
}
_TOML_SLOTS = [*_GOOD_TOML, "name", "protocol", "connection_policy", "scale_down_window_s", "vantage", "enabled"]


def _toml_value(value: Any) -> str | None:
    """`value` as TOML (None: TOML has no null)."""
    if value is None:
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else "inf" if value > 0 else "-inf"
    return json_text(value)  # JSON's strings, numbers, arrays and {} are TOML's too


def _toml_table(name: str, over: dict[str, str]) -> str:
    fields = {"name": json.dumps(name)} | {k: json_text(v) for k, v in _GOOD_TOML.items()} | over
    return "[[endpoint]]\n" + "".join(f"{k} = {v}\n" for k, v in fields.items()) + "\n"


def _toml(case: Case | None) -> bytes:
    tables = [_toml_table(f"good-{i}", {}) for i in range(2)]
    text = _toml_value(case.value) if case is not None and case.role == "value" else None
    if text is not None:
        tables += [_toml_table(f"slot-{k}", {field: text}) for k, field in enumerate(_TOML_SLOTS)]
    if case is not None and case.role == "pasted":
        tables.append(_toml_table("pasted", {"api_key_env": json.dumps(case.pasted)}))
    return "".join(tables).encode("utf-8", "surrogatepass")


# reader → its documents: (file name, the document of a case)
DOCUMENTS: dict[str, list[tuple[str, Callable[[Case | None], bytes]]]] = {
    "logs": [("requests.jsonl", _jsonl(_log_record, _LOG_SLOTS)), ("requests.csv", _log_csv)],
    "prefix": [("mooncake.jsonl", _jsonl(_mooncake, _MOONCAKE_SLOTS)), ("chat.jsonl", _jsonl(_chat, _CHAT_SLOTS))],
    "toml": [("endpoints.toml", _toml)],
}


def files_of(reader: str, case: Case, env: Env) -> list[Path]:
    """The files the case makes of `reader`'s documents (DOCUMENTS' keys), in a fresh folder."""
    folder = env.folder()
    out = []
    for name, document in DOCUMENTS[reader]:
        path = folder / name
        if case.role == "body":
            assert case.body is not None
            path.write_bytes(case.body)
        elif case.role == "transform":
            assert case.transform is not None
            path.write_bytes(case.transform(document(None)))
        elif case.role in ("value", "time", "pasted"):
            path.write_bytes(document(case))
        elif case.behaviour == "black_hole":
            os.mkfifo(path)
        elif case.behaviour == "huge":
            with open(path, "wb") as fh:
                fh.write(document(None))
                fh.truncate(HUGE_FILE_BYTES)  # sparse: a hole of NULs, nothing written to disk
        elif case.behaviour == "endless":
            path.symlink_to("/dev/zero")
        elif case.behaviour == "cut_gz":
            path = path.with_name(path.name + ".gz")
            path.write_bytes(cut_gzip(document(None)))
        else:
            path = path.with_name(path.name + (".gz" if case.behaviour == "gzip_bomb" else ".zst"))
            path.write_bytes(gzip_bomb() if case.behaviour == "gzip_bomb" else zstd_bomb())
        out.append(path)
    return out


def release_pipes(paths: list[Path]) -> None:
    """Open each named pipe among `paths` for writing and close it, so a reader blocked on it gets an end of file."""
    for path in paths:
        if path.is_fifo():
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:  # no reader holds it open
                pass


# --- readers --------------------------------------------------------------------------------------------------------

_MAX_TS_MS = 4_102_444_800_000  # 2100


def _checked_good(case: Case, read: int) -> list[str]:
    """A value's or a time's good records must all be read beside the hostile ones."""
    return (
        [f"{read} records read of the {GOOD + 1} good ones"]
        if case.role in ("value", "time") and read < GOOD + 1
        else []
    )


def logs_read(case: Case, env: Env, deadline_s: float) -> list[Outcome]:
    """read_logs of each log file the case makes (the cap FILE_CAP_BYTES)."""
    from planner.logs import read_logs

    out = []
    for path in files_of("logs", case, env):
        try:
            res = read_logs([path], max_bytes=FILE_CAP_BYTES)
        except PlannerError as exc:
            out.append(one_line(str(exc)))
            continue
        f = res.frame
        problems = _checked_good(case, len(f))
        if not (
            f["ts_ms"].between(0, _MAX_TS_MS).all()
            and (f[["prompt_tokens", "cached_tokens", "output_tokens"]] >= 0).all().all()
        ):
            problems.append("a time or a count out of range")
        for column in ("ttft_ms", "duration_ms"):  # the log reader's rule: a timing is finite and not negative
            known = f[column].dropna()
            if not known.between(0, math.inf, inclusive="left").all():
                problems.append(f"{column} holds {known[~known.between(0, math.inf, inclusive='left')].tolist()[:3]}")
        out.append(_outcome(problems, [str(r) for r in res.rejected], f"{len(f)} requests", [f.to_string()]))
    return out


def _outcome(problems: list[str], rejected: list[str], read: str, texts: list[str]) -> Outcome:
    if problems:
        return Outcome(WRONG, "; ".join(problems[:3]), texts + rejected)
    if rejected:
        return Outcome(REFUSED, f"{read}; {len(rejected)} rejected: {rejected[:2]}", texts + rejected)
    return Outcome(READ, read, texts)


def prefix_read(case: Case, env: Env, deadline_s: float) -> list[Outcome]:
    """read_prefix_trace of each trace the case makes (the cap FILE_CAP_BYTES)."""
    from planner.kvcache.chains import read_prefix_trace

    out = []
    for path in files_of("prefix", case, env):
        try:
            trace = read_prefix_trace(path, max_bytes=FILE_CAP_BYTES)
        except PlannerError as exc:
            out.append(one_line(str(exc)))
            continue
        problems = _checked_good(case, len(trace.requests))
        for r in trace.requests:
            counts = sane_number(r.prompt_tokens, whole=True, top=1e9) and sane_number(
                r.output_tokens, whole=True, top=1e9
            )
            if not (counts and isinstance(r.ts_ms, int) and abs(r.ts_ms) <= _MAX_TS_MS):
                problems.append(f"read {r!r}"[:200])
        rejected = [str(r) for r in trace.rejected]
        out.append(_outcome(problems, rejected, f"{len(trace.requests)} requests", [repr(trace.requests)[:2000]]))
    return out


_NOT_A_NUMBER = re.compile(r"\b(nan|inf|infinity)\b", re.IGNORECASE)


def _command(args: list[str]) -> Outcome:
    """One run of the CLI (in this process): READ on exit 0, REFUSED on a non-zero exit with its error line."""
    from planner.cli import cli

    result = CliRunner().invoke(cli, args)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        result.exception.add_note(f"ttft-planner {' '.join(args[:2])} on a hostile file")
        raise result.exception
    output = result.output
    if "Traceback" in output:
        return Outcome(WRONG, "a traceback in the output", [output])
    if result.exit_code == 0:
        figures = [line for line in result.stdout.splitlines() if "rejected" not in line]  # rejects quote values
        odd = [line for line in figures if _NOT_A_NUMBER.search(line)]
        if odd:
            return Outcome(WRONG, f"a figure that is no number: {odd[0].strip()[:200]!r}", [output])
        said = f"exit 0: {' / '.join(result.stdout.strip().splitlines()[:2])[:300]}"
        return Outcome(REFUSED if " rejected" in result.stdout else READ, said, [output])  # lines named, rest read
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    said = next((line for line in reversed(lines) if line.lower().startswith("error")), lines[-1] if lines else "")
    if not said:
        return Outcome(WRONG, f"exit {result.exit_code} with no error line", [output])
    return Outcome(REFUSED, f"exit {result.exit_code}: {said}", [output])


def logs_summarize(case: Case, env: Env, deadline_s: float) -> list[Outcome]:
    """`ttft-planner logs summarize FILE` of each log file the case makes."""
    return [_command(["logs", "summarize", str(path)]) for path in files_of("logs", case, env)]


def prefix_command(case: Case, env: Env, deadline_s: float) -> list[Outcome]:
    """`ttft-planner prefix FILE` of each trace the case makes."""
    return [_command(["prefix", str(path)]) for path in files_of("prefix", case, env)]


def endpoints_import(case: Case, env: Env, deadline_s: float) -> list[Outcome]:
    """`ttft-planner endpoints import FILE` into a fresh store; the endpoints it stored must be sane."""
    from planner.endpoints.registry import list_endpoints
    from planner.store import open_store
    from tests.support.store_template import migrated_sqlite

    out = []
    for path in files_of("toml", case, env):
        url = migrated_sqlite(path.parent / "store.db")
        outcome = _command(["endpoints", "import", str(path), "--database-url", url])
        engine = open_store(url)
        try:
            stored = list_endpoints(engine)
        finally:
            engine.dispose()
        for e in stored:
            figures = (e.interval_s, e.timeout_s, e.prompt_tokens, e.max_tokens)
            if not all(sane_number(x, top=1e9) for x in figures) or not e.name or not e.base_url:
                outcome = Outcome(WRONG, f"stored endpoint {e.name!r} with {figures!r}", outcome.texts)
        outcome.texts.append(repr(stored))
        out.append(outcome)
    return out
