"""Each input range declared once: the pages' number inputs take their bounds from a planner.inputs.validate Rule
(through ttft_planner_app.widgets.number_input_for), the one the command's option and the library's check follow.

The first test walks every view's source (AST) and fails on a number input or slider given a bound of its own
(min_value/max_value, by keyword or position); the few bounds that are genuinely a page's choice are listed with why.
The second holds the example the issue found drifted: the alert window, ≥ 0.1 min on the page and 0.01–10,080 in
`alerts add`, is one range on the page, in the command and in build_rule.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.alerts.rules import build_rule
from planner.cli import cli
from planner.inputs.validate import ALERT_WINDOW_MIN, OutOfRange
from tests.app.conftest import open_page

VIEWS = Path(__file__).resolve().parents[2] / "app" / "views"
#: The calls that draw a number input: Streamlit's own, and persisted_number (keyword arguments passed on).
NUMBER_INPUTS = {"number_input", "persisted_number", "slider"}
#: Positional parameters of st.number_input / st.slider after the label: min_value, max_value.
POSITIONAL_BOUNDS = {"number_input": (1, 2), "slider": (1, 2), "persisted_number": ()}

#: (view file, the input's label or key) → why its bound is the page's own choice, not a rule's.
PAGE_CHOICES: dict[tuple[str, str], str] = {
    ("capacity_tabs/_common.py", "Usable share of HBM"): "a slider spans the plausible shares (0.5–1); the command "
    "takes any in USABLE_HBM_FRACTION",
    ("capacity_tabs/prefill.py", "cap_pf_mfu"): "a slider spans the plausible utilisations (0.05–1); the command "
    "takes any in MFU",
    ("sweep.py", "sweep_at_load"): "the slider spans the stored sweep's own loads (data, not a range)",
    ("regions_sections/measure.py", "rtt_n"): "the browser measures too: at most 100 a region keeps a page's run "
    "short (`rtt -n` takes RTT_SAMPLES)",
    ("capacity_tabs/prefix.py", "cap_px_reps"): "the tab replays every replica's cache on each run: 64 keeps it "
    "interactive (`prefix --replicas` takes REPLICAS)",
}
#: Views other engineers are reworking now (their number inputs move to rules with them).
NOT_YET = {"logs_tabs"}


def _name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _ident(call: ast.Call) -> str:
    """The input's key when it has one, else its label (a literal or an f-string's text)."""
    for kw in call.keywords:
        if kw.arg == "key" and isinstance(kw.value, ast.Constant):
            return str(kw.value.value)
    if call.args and isinstance(call.args[0], ast.Constant):
        return str(call.args[0].value)
    return ast.unparse(call.args[0]) if call.args else "?"


def own_bounds() -> list[tuple[str, str, str]]:
    """(view file, input, the bound) of every number input or slider given a bound of its own."""
    out = []
    for path in sorted(VIEWS.rglob("*.py")):
        rel = path.relative_to(VIEWS).as_posix()
        if rel.split("/")[0] in NOT_YET:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or _name(node) not in NUMBER_INPUTS:
                continue
            bounds = [kw.arg for kw in node.keywords if kw.arg in ("min_value", "max_value")]
            bounds += [f"argument {i + 1}" for i in POSITIONAL_BOUNDS[_name(node)] if len(node.args) > i]
            out += [(rel, _ident(node), b) for b in bounds]
    return out


def test_no_number_input_on_a_page_states_a_bound_of_its_own():
    found = own_bounds()
    assert [f for f in found if (f[0], f[1]) not in PAGE_CHOICES] == []
    assert sorted(k for k in PAGE_CHOICES if k not in {(f[0], f[1]) for f in found}) == []  # the list only shrinks


def test_the_alert_window_is_one_range_on_the_page_in_the_command_and_in_the_library(sqlite_store_url):
    at = open_page("alerts")
    window = at.number_input(key="alert_window")
    assert (window.min, window.max) == (ALERT_WINDOW_MIN.lo, ALERT_WINDOW_MIN.hi) == (0.01, 10_080)

    def add(name: str, window_min: str):
        return CliRunner().invoke(
            cli,
            [
                *("alerts", "add", name, "--threshold", "500", "--window-min", window_min),
                *("--database-url", sqlite_store_url),
            ],
        )

    ok = add("short window", "0.05")  # below the page's old floor (0.1), inside the rule
    assert ok.exit_code == 0, ok.output
    refused = add("long window", "20000")
    assert refused.exit_code == 2 and "--window-min" in refused.output and "10,080" in refused.output
    with pytest.raises(OutOfRange, match=r"^window must be a number from 0\.01 to 10,080 min"):
        build_rule("x", "p95_over", threshold=500, window_min=20_000, for_min=5, min_n=20)
