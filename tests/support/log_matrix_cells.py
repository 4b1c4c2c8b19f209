"""Which cells of the defect matrix run (tests/support/log_matrix), and how a reading is held to a cell's truth.

quick_cells is the default (about a minute's work on a shared machine), cover_cells a pairwise cover of the byte
variants for every defect and pair, every_cell the whole product. `mismatches` compares a reading, put as
`ttft-planner logs summarize --json` puts it, with the truth.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from tests.support.log_matrix import DEFECTS, FORMATS, PACKINGS, Cell, Truth, applies

__all__ = ["HEAVY", "VARIANTS", "cover_cells", "every_cell", "mismatches", "quick_cells"]

HEAVY = ("huge", "huge_xl")  # tens of MB a file, and today's reader takes seconds over them: few cells
STRUCTURE = ("malformed", "cut_tail", "qbreak", "dup_column", *HEAVY)  # defects of the lines, not of a value
# (crlf, bom, packing, far): any two values of two of these are in some row (a pairwise cover of 2 × 2 × 3 × 2)
VARIANTS = (
    (False, False, "plain", False),
    (False, False, "gz", True),
    (False, True, "zst", False),
    (True, False, "zst", True),
    (True, True, "plain", True),
    (True, True, "gz", False),
)
_HALVES = ((0, 4), (1, 5), (2, 3))  # two rows of VARIANTS holding LF and CRLF, BOM and none, early and far
# (crlf, bom, packing) of early cells in turn: each value changing from one to the next, every combination in 12
_EARLY = tuple((k % 2 == 1, k // 2 % 2 == 1, PACKINGS[k % 3]) for k in range(12))
_QUICK_HEAVY = {"jsonl": ("huge", "huge_xl"), "csv": ("huge_xl",), "rfc": ("huge",)}


def _cell(fmt: str, defects: tuple[str, ...], variant: tuple[bool, bool, str, bool]) -> Cell:
    crlf, bom, packing, far = variant
    if fmt == "parquet":
        crlf = bom = False
    return Cell(fmt, defects, crlf, bom, packing, far)


def quick_cells() -> list[Cell]:
    """The default matrix. For each text format: the clean file twice (LF; CRLF + BOM + .zst); each light defect
    alone, early, the line end, BOM and packing changing from one to the next; the heavy defects alone once (a 20 MiB
    field in JSON Lines and RFC CSV, a 41/33 MiB one in JSON Lines and the gateway CSV); every pair of malformed, cut
    tail, quoted break and text count, and a repeated column beside a malformed line; all the light defects together
    but the repeated column, early in LF without BOM and far in CRLF + BOM + .gz. For Parquet: the clean file, each
    defect alone, every pair, and all together early and far."""
    out: list[Cell] = []
    for fmt in FORMATS:
        mine = [d for d in DEFECTS if fmt in DEFECTS[d]]
        together = tuple(d for d in mine if d not in HEAVY and d != "dup_column")
        if fmt == "parquet":
            out += [_cell(fmt, (), VARIANTS[0])]
            out += [_cell(fmt, (d,), VARIANTS[k % 6]) for k, d in enumerate(mine)]
            out += [_cell(fmt, pair, VARIANTS[k % 6]) for k, pair in enumerate(itertools.combinations(mine, 2))]
            out += [_cell(fmt, together, VARIANTS[0]), _cell(fmt, together, VARIANTS[3])]
            continue
        out += [Cell(fmt), Cell(fmt, (), True, True, "zst")]
        light = [d for d in mine if d not in HEAVY]
        out += [Cell(fmt, (d,), *_EARLY[k % len(_EARLY)]) for k, d in enumerate(light)]
        out += [Cell(fmt, (d,), packing="zst") for d in _QUICK_HEAVY[fmt]]
        core = [d for d in ("malformed", "cut_tail", "qbreak", "text_count") if d in mine]
        out += [Cell(fmt, pair, *_EARLY[k % len(_EARLY)]) for k, pair in enumerate(itertools.combinations(core, 2))]
        out += [Cell(fmt, ("malformed", "dup_column"), True, True, "gz")]
        out += [Cell(fmt, together), Cell(fmt, together, True, True, "gz", True)]
    return list(dict.fromkeys(c for c in out if applies(c)))


def cover_cells() -> list[Cell]:
    """A wider matrix (some minutes). For each format: the clean file in every row of VARIANTS; each defect alone in
    two rows that between them hold LF and CRLF, BOM and none, early and far; every pair with a defect of the line
    structure in it (for Parquet every pair) once, the variant rotating; and all the defects together but the
    repeated column in three rows that hold every value, with the heavy ones in one more."""
    out: list[Cell] = []
    for fmt in FORMATS:
        mine = [d for d in DEFECTS if fmt in DEFECTS[d]]
        together = tuple(d for d in mine if d not in HEAVY and d != "dup_column")
        out += [_cell(fmt, (), v) for v in VARIANTS]
        for k, d in enumerate(mine):
            out += [_cell(fmt, (d,), VARIANTS[r]) for r in _HALVES[k % 3]]
        pairs = [p for p in itertools.combinations(mine, 2) if fmt == "parquet" or set(p) & set(STRUCTURE)]
        for k, pair in enumerate(p for p in pairs if not set(p) <= set(HEAVY)):
            out.append(_cell(fmt, pair, VARIANTS[k % 6]))
        out += [_cell(fmt, together, VARIANTS[r]) for r in (0, 3, 5)]
        if any(d in mine for d in HEAVY):
            out.append(_cell(fmt, together + tuple(d for d in HEAVY if d in mine), VARIANTS[4]))
    return list(dict.fromkeys(c for c in out if applies(c)))


def every_cell() -> list[Cell]:
    """The whole matrix (hours): the clean file, each defect alone, every pair and all together (but the repeated
    column), in every line end, BOM, packing and placement (for Parquet: packing and placement)."""
    out: list[Cell] = []
    variants = list(itertools.product((False, True), (False, True), PACKINGS, (False, True)))
    for fmt in FORMATS:
        mine = [d for d in DEFECTS if fmt in DEFECTS[d]]
        sets = [
            (),
            *((d,) for d in mine),
            *itertools.combinations(mine, 2),
            tuple(d for d in mine if d != "dup_column"),
        ]
        out += [Cell(fmt, defects, *v) for defects in sets for v in variants]
    return list(dict.fromkeys(c for c in out if applies(c)))


def mismatches(truth: Truth, got: dict[str, Any], file_name: str) -> list[str]:
    """What a reading `got` says otherwise than the truth, one line each ([] when it matches).

    got: `ttft-planner logs summarize --json`'s object (read_logs' and summarize's results put the same way: the
    summary's to_dict(), n_rejected, and rejected as {source, line_no, reason}). Figures are compared exactly but for
    the cache shares (ratios, to 1e-9); a named line's reason must match its pattern.
    """
    out: list[str] = []

    def same(have: Any, want: Any) -> bool:
        if isinstance(have, float) and isinstance(want, float):
            return abs(have - want) <= 1e-9 * max(1.0, abs(want))
        return bool(have == want)

    for what, have, want in (
        ("n", got["n"], truth.n),
        ("first arrival ms", got["first_ts_ms"], truth.first_ts_ms),
        ("last arrival ms", got["last_ts_ms"], truth.last_ts_ms),
        ("TTFT n", got["ttft_ms"]["p50"]["n"], truth.ttft_n),
        ("cached token share", got["cached_share"]["token_fraction"], truth.token_fraction),
        ("cached request share", got["cached_share"]["request_fraction"], truth.request_fraction),
        ("rejected lines", got["n_rejected"], len(truth.named)),
    ):
        if not same(have, want):
            out.append(f"{what}: read {have!r}, truth {want!r}")
    for key, want_pcs in (("prompt_tokens", truth.prompt), ("output_tokens", truth.output), ("ttft_ms", truth.ttft)):
        off = [
            f"{k} {got[key][k]['value']!r} ≠ {v!r}" for k, v in want_pcs.items() if not same(got[key][k]["value"], v)
        ]
        if off:
            out.append(f"{key} (read ≠ truth): {', '.join(off)}")
    models = {r["model"]: r["n"] for r in got["models"]}
    names = sorted({*models, *truth.models})
    off = [
        f"{m!r} {models.get(m, 0)} ≠ {truth.models.get(m, 0)}" for m in names if models.get(m) != truth.models.get(m)
    ]
    if off:
        out.append(f"requests per model (read ≠ truth): {', '.join(off)}")
    named: dict[int, list[str]] = {}
    for r in got["rejected"]:
        named.setdefault(r["line_no"], []).append(r["reason"])
    for line, pattern in truth.named:
        reasons = named.pop(line, [])
        if not reasons:
            out.append(f"line {line} not named (truth: /{pattern}/)")
        elif not any(re.search(pattern, why, re.IGNORECASE) for why in reasons):
            out.append(f"line {line} named {reasons[0][:160]!r}, not /{pattern}/")
    for line, reasons in sorted(named.items()):
        out.append(f"line {line} named {reasons[0][:160]!r}: the truth reads that line, or has no such line")
    if any(r["source"] != file_name for r in got["rejected"]):
        out.append(f"a rejection names another file than {file_name}: {sorted({r['source'] for r in got['rejected']})}")
    return out
