"""The report: HTML (parsed), Markdown and CSV carry the same numbers; the CLI writes them."""

import csv
import datetime as dt
import io
import json
import re
from html.parser import HTMLParser

import pytest
from click.testing import CliRunner

from planner.cli import cli
from planner.compare import compare, report_csv, report_html, report_markdown
from planner.percentiles import percentile
from planner.store import open_store
from tests.support.compare_seed import SEED_START_MS, seed_endpoint, seed_three
from tests.support.store_template import migrated_sqlite

NAMES = ["fast-a", "slow-b", "twin-c"]


class _Tables(HTMLParser):
    """Collects every table by id (rows of (text, class) cells), list items by list id, script tags."""

    def __init__(self):
        super().__init__()
        self.tables: dict[str, list[list[tuple[str, str]]]] = {}
        self.lists: dict[str, list[str]] = {}
        self.scripts: list[dict] = []
        self._table = self._list = None
        self._cell = None
        self._in_script = False
        self.script_chars = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self._table = a.get("id")
            self.tables[self._table] = []
        elif tag == "tr" and self._table:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table:
            self._cell = ["", a.get("class") or ""]
        elif tag == "ul":
            self._list = a.get("id")
            self.lists[self._list] = []
        elif tag == "li" and self._list:
            self.lists[self._list].append("")
        elif tag == "script":
            self.scripts.append(a)
            self._in_script = True

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[self._table][-1].append(tuple(self._cell))
            self._cell = None
        elif tag == "table":
            self._table = None
        elif tag == "ul":
            self._list = None
        elif tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._cell is not None:
            self._cell[0] += data
        elif self._list and self.lists[self._list]:
            self.lists[self._list][-1] += data
        if self._in_script:
            self.script_chars += len(data)


@pytest.fixture(scope="module")
def cmp(tmp_path_factory):
    """One comparison for the module's tests, which only read it (seeding and comparing take seconds)."""
    engine = open_store(migrated_sqlite(tmp_path_factory.mktemp("cmp") / "planner.db"))
    values = seed_three(engine, n=240)
    seed_endpoint(engine, "new-d", median_ms=250, n=12, seed=11)
    result = compare(engine, [*NAMES, "new-d"], now_ms=1_796_000_000_000), values
    engine.dispose()
    return result


def _parse(text: str) -> _Tables:
    p = _Tables()
    p.feed(text)
    return p


def _rows(table):
    header = [c[0] for c in table[0]]
    return [dict(zip(header, row, strict=True)) for row in table[1:]]


def test_html_report_contains_the_decision_and_the_measured_numbers(cmp):
    c, values = cmp
    doc = _parse(report_html(c))
    decision = _rows(doc.tables["decision"])
    assert [r["Endpoint"][0] for r in decision][-2:] == ["slow-b", "new-d"]
    slow = next(r for r in decision if r["Endpoint"][0] == "slow-b")
    p95 = percentile(values["slow-b"].tolist(), 0.95).value
    assert slow["TTFT p95 (ms)"][0] == f"{p95:,.0f}"
    assert slow["Samples (n)"][0] == "240"
    assert "decided by" in slow["Chat panel / single-file edit (500 ms)"][0]
    metrics = {r["Endpoint"][0]: r for r in _rows(doc.tables["metrics"])}
    assert metrics["slow-b"]["error rate"][0] == "4.0%"
    assert metrics["fast-a"]["latest cold TTFT (ms)"][0] == "21,000"
    # Too few samples: the p95 is greyed (class "few"), a reliable one is not.
    assert "few" in metrics["new-d"]["TTFT p95 (ms)"][1].split()
    assert "few" not in metrics["slow-b"]["TTFT p95 (ms)"][1].split()
    assert "few" in metrics["new-d"]["TTFT p99 (ms)"][1].split()


def test_html_report_is_self_contained_with_charts_ci_and_method(cmp):
    c, _ = cmp
    text = report_html(c)
    doc = _parse(text)
    # plotly.js is inline: no script loads from anywhere, and the inline code is megabytes.
    assert all("src" not in s for s in doc.scripts)
    assert doc.script_chars > 1_000_000
    assert not re.search(r"<(script|link)[^>]+(src|href)=\"https?://", text)
    assert len(re.findall(r'id="chart-\d"', text)) == 3
    diffs = doc.lists["differences"]
    assert any("cannot yet tell" in d and "twin-c" in d and "fast-a" in d for d in diffs)
    assert any("slow-b" in d and "is faster" in d for d in diffs)
    method = " ".join(doc.lists["method"])
    assert "nearest-rank" in method and "bootstrap" in method and "fast-a n=240" in method
    assert dt.datetime.fromtimestamp(SEED_START_MS / 1000, dt.UTC).strftime("%Y-%m-%d") in method
    worksheets = _rows(doc.tables["worksheets"])
    assert len(worksheets) == 4 * 3  # four endpoints × three interaction types
    assert {r["verdict"][0] for r in worksheets} <= {"OK", "Prompt too long", "Over budget", "No verdict", "No data"}
    # The rules behind the ranking and "targets met" are on the page a buyer forwards.
    assert "fewer than 20 samples ranks after" in text and "Targets met” counts" in text


def test_markdown_and_csv_carry_the_same_table(cmp):
    c, values = cmp
    md = report_markdown(c)
    p95 = percentile(values["slow-b"].tolist(), 0.95).value
    row = next(line for line in md.splitlines() if line.startswith("| 3 | slow-b |"))
    assert f"| {p95:,.0f} |" in row
    assert "cannot yet tell fast-a and twin-c apart" in md or "cannot yet tell twin-c and fast-a apart" in md
    rows = list(csv.DictReader(io.StringIO(report_csv(c))))
    assert [r["endpoint"] for r in rows] == [r.metrics.name for r in c.ranked]
    # The rank as written: "1", "2", … — a literal, not str(r.rank), so a rank written "1.0" (a float) fails here.
    assert [r["rank"] for r in rows] == ["1", "2", "3", "4"]
    assert [r["rank"] for r in rows] == [f"{int(r.rank)}" for r in c.ranked]
    assert [line.split(",", 1)[0] for line in report_csv(c).splitlines()[1:]] == ["1", "2", "3", "4"]  # as stored
    slow = next(r for r in rows if r["endpoint"] == "slow-b")
    assert float(slow["ttft_p95_ms"]) == p95 and slow["n"] == "240" and float(slow["error_rate"]) == 10 / 250


def test_no_export_mentions_the_api_key_env_var(cmp):
    c, _ = cmp
    for text in (report_html(c), report_markdown(c), report_csv(c)):
        assert "SECRET_KEY_ENV_NAME" not in text


@pytest.fixture(scope="module")
def three_url(tmp_path_factory) -> str:
    """A store with fast-a (~300 ms), slow-b (~600 ms) and twin-c, for the CLI tests (`report` only reads it)."""
    url = migrated_sqlite(tmp_path_factory.mktemp("three") / "planner.db")
    engine = open_store(url)
    seed_three(engine, n=120)
    engine.dispose()
    return url


def test_cli_report_writes_html_markdown_and_csv(three_url, tmp_path):
    out, md, csv_path = tmp_path / "r.html", tmp_path / "r.md", tmp_path / "r.csv"
    res = CliRunner().invoke(
        cli,
        [
            "report",
            "--endpoints",
            "fast-a,slow-b",
            "--database-url",
            three_url,
            "--out",
            str(out),
            "--markdown",
            str(md),
            "--csv",
            str(csv_path),
            "--price",
            "fast-a=0.5",
            "--tokens-per-month",
            "1e9",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "1. fast-a" in res.output and "fast-a is faster" in res.output
    assert _parse(out.read_text()).tables["decision"][1][1][0] == "fast-a"
    assert "| 1 | fast-a |" in md.read_text()
    rows = list(csv.DictReader(io.StringIO(csv_path.read_text())))
    assert float(rows[0]["monthly_cost_usd"]) == 500.0
    res = CliRunner().invoke(
        cli, ["report", "--endpoints", "slow-b,fast-a", "--database-url", three_url, "--out", str(out), "--json"]
    )
    summary = json.loads(res.output)
    assert [r["endpoint"] for r in summary["ranking"]] == ["fast-a", "slow-b"]
    assert summary["ranking"][1]["vs_leader"] == "fast-a is faster" and summary["files"] == [str(out)]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--endpoints", "fast-a,nope"], "unknown endpoint(s): nope"),
        (["--endpoints", "fast-a", "--since", "yesterday"], "is not a date"),
        (["--endpoints", "fast-a", "--since", "2026-11-29", "--until", "2026-11-28"], "--since must be before --until"),
        (["--endpoints", "fast-a", "--price", "fast-a"], "ENDPOINT=USD_PER_MTOK"),
        (["--endpoints", "fast-a", "--tz", "Mars/Olympus"], "unknown time zone"),
        (["--endpoints", "fast-a", "--worksheet", "missing"], "no worksheet named 'missing'"),
    ],
)
def test_cli_bad_input_exits_2_naming_the_problem(three_url, tmp_path, args, message):
    res = CliRunner().invoke(cli, ["report", *args, "--database-url", three_url, "--out", str(tmp_path / "r.html")])
    assert res.exit_code == 2, res.output
    assert message in res.output
    assert not (tmp_path / "r.html").exists()


def test_cli_report_margin_is_settable_and_stated(three_url, tmp_path):
    out = tmp_path / "r.html"  # fast-a ~300 ms vs slow-b ~600 ms: a difference of about 300 ms
    base = ["report", "--endpoints", "fast-a,slow-b", "--database-url", three_url, "--out", str(out)]
    res = CliRunner().invoke(cli, base)
    assert "fast-a is faster" in res.output and "larger of 5 ms and 3% of the faster p95" in out.read_text()
    res = CliRunner().invoke(cli, [*base, "--margin-ms", "5000"])  # a margin wider than any plausible difference
    assert res.exit_code == 0, res.output
    assert "practically equivalent" in res.output and "±5,000 ms" in res.output
    assert "larger of 5000 ms" in out.read_text()


def test_a_percentile_from_too_few_samples_carries_the_one_mark_in_every_report_format(cmp):
    """new-d has 12 samples: its p95 and p99 rest on too few (p95 needs 20), marked "(too few)" as on the pages and in
    the commands (planner.present), in the Markdown and in the HTML; the others' are not."""
    c, _ = cmp
    md_rows = [line for line in report_markdown(c).splitlines() if line.startswith("| new-d") or "fast-a" in line]
    new_d = next(line for line in md_rows if line.startswith("| new-d"))
    assert new_d.count("(too few)") >= 2, new_d
    metrics = {r["Endpoint"][0]: r for r in _rows(_parse(report_html(c)).tables["metrics"])}
    assert metrics["new-d"]["TTFT p95 (ms)"][0].endswith(" (too few)")
    assert not metrics["fast-a"]["TTFT p95 (ms)"][0].endswith("(too few)")
