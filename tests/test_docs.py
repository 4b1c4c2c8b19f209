"""The manual documents every setting, every command and every page (datasette's and sqlite-utils' documentation
tests), and a newcomer can find it: a short README that starts with the two commands and links the docs site early.

The manual is the docs site (docs/, mkdocs.yml; `make docs` builds it in strict mode, which `make test` runs after
lint, so a broken link or a page missing from the nav fails there). These tests hold what the build cannot: the facts
the pages must state, that nothing the long README said was dropped on the way into the site, and the screenshots.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

import click
import pytest

from planner.cli import cli
from planner.settings import SETTINGS, Setting
from tests.support.router import router_pages

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = ROOT / "docs"
DOC_PAGES = {p.relative_to(DOCS).as_posix(): p.read_text(encoding="utf-8") for p in sorted(DOCS.rglob("*.md"))}
#: Everything a reader can find: the README and every page of the docs site.
MANUAL = "\n".join([README, *DOC_PAGES.values()])
SETTINGS_PAGE = "settings.md"
COMMANDS_PAGE = "command-line.md"
SHOTS = ROOT / "assets" / "screenshots"

#: Every heading of the README before it moved into the docs site (issue 44): each has a home there.
OLD_README_HEADINGS = (
    "Worksheet (home)",
    "Probes and Endpoints: scheduled TTFT probes, cold readings (segments 1 and 2)",
    "Regions: network round-trip time (segment 4)",
    "Logs: how long are our prompts, how cached, when do they arrive?",
    "Sources: production traffic from the LiteLLM proxy, Prometheus and OpenTelemetry",
    "Capacity & cost",
    "Compare providers, and a report a buyer can forward",
    "What-if: replay your traffic against candidate deployments",
    "Command line",
    "Measure TTFT once: `ttft-planner probe`",
    "TTFT under load: `ttft-planner sweep`",
    "A local endpoint to probe: `ttft-planner simulate`",
    "Storage: SQLite by default, PostgreSQL for teams",
    "For a team: sign-in and roles, SLO alerts, Prometheus metrics",
    "Settings",
    "Security and faults",
    "Pointing it at real providers",
    "Protocols and the provider catalog",
    "Measured against llama.cpp (by hand, not in CI)",
    "Development",
    "Benchmarks",
    "Known limits",
)


def _row(text: str, first_cell: str) -> str | None:
    """The Markdown table row of `text` whose first cell is exactly `first_cell` (with backticks), or None."""
    for line in text.splitlines():
        if line.startswith(f"| {first_cell} |"):
            return line
    return None


def _headings(text: str) -> list[str]:
    """The Markdown headings of `text` (outside fenced blocks), without their #s."""
    found, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"^#{1,6} (.+)$", line)):
            found.append(m.group(1).strip())
    return found


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.name)
def test_settings_are_documented(setting: Setting) -> None:
    row = _row(DOC_PAGES[SETTINGS_PAGE], f"`{setting.name}`")
    assert row is not None, f"docs/{SETTINGS_PAGE} has no settings-table row for {setting.name}"
    assert setting.default in row.replace("`", ""), f"docs/{SETTINGS_PAGE}'s row for {setting.name} lacks its default"


def test_every_variable_the_code_reads_is_a_setting() -> None:
    names = {s.name for s in SETTINGS}
    pattern = re.compile(r"TTFT_PLANNER_[A-Z0-9_]*[A-Z0-9]")
    found: dict[str, str] = {}
    for folder in ("planner", "app", "tests", "bench", "scripts"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in {".py", ".sh"}:
                for name in pattern.findall(path.read_text(encoding="utf-8")):
                    found.setdefault(name, str(path.relative_to(ROOT)))
    assert found, "no TTFT_PLANNER_ variable found: the scan is broken"
    missing = {name: where for name, where in found.items() if name not in names}
    assert not missing, f"not in planner/settings.py (so not in docs/{SETTINGS_PAGE}'s table): {missing}"


def _commands(group: click.Group, prefix: str):
    ctx = click.Context(group)
    for name in sorted(group.list_commands(ctx)):
        command = group.get_command(ctx, name)  # loads a lazily registered command
        if command is None or command.hidden:
            continue
        yield f"{prefix} {name}", prefix, name
        if isinstance(command, click.Group):
            yield from _commands(command, f"{prefix} {name}")


COMMANDS = list(_commands(cli, "ttft-planner"))


def test_the_walk_finds_nested_commands() -> None:
    assert any(path.count(" ") == 2 for path, _, _ in COMMANDS), "no subcommand found: the walk is broken"


@pytest.mark.parametrize(("path", "parent", "name"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_commands_are_documented(path: str, parent: str, name: str) -> None:
    """A command is documented by `ttft-planner … NAME` anywhere in the manual, or a subcommand by `NAME` in its
    group's row of the command-line overview's table."""
    if re.search(rf"`{re.escape(path)}(?![\w-])", MANUAL):
        return
    group_row = _row(DOC_PAGES[COMMANDS_PAGE], f"`{parent}`") if parent != "ttft-planner" else None
    assert group_row is not None and f"`{name}`" in group_row, f"the manual does not mention `{path}`"


def test_the_readme_starts_with_the_two_commands() -> None:
    lines = README.splitlines()
    assert lines[0] == "# TTFT Planner"
    body = [line for line in lines[1:] if line.strip()]
    assert body[0] == "```bash", "something comes between the title and the two commands"
    commands = [line.split("#")[0].strip() for line in body[1 : body.index("```")]]
    assert commands == ["make run", "make test"]


def test_the_readme_links_the_docs_site_in_its_first_30_lines_and_is_short() -> None:
    """Issue 44: the README was 1,295 lines and first linked docs/architecture.md at line 1,197."""
    head = "\n".join(README.splitlines()[:30])
    assert "](docs/index.md)" in head, "the README's first 30 lines do not link the docs site (docs/index.md)"
    assert len(README.splitlines()) < 200


@pytest.mark.parametrize("heading", OLD_README_HEADINGS)
def test_every_heading_the_long_readme_had_is_a_heading_in_the_docs_site(heading: str) -> None:
    homes = [page for page, text in DOC_PAGES.items() if heading in _headings(text)]
    assert homes, f"no page of docs/ has the heading {heading!r}"


def _nav_pages() -> list[str]:
    """The .md files mkdocs.yml's nav names (read as text: its YAML carries a Python tag for Mermaid)."""
    return re.findall(r"^\s+- (?:[^:\n]+: )?([\w/.-]+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), re.MULTILINE)


def test_every_docs_page_is_in_the_nav_once() -> None:
    nav = _nav_pages()
    assert sorted(nav) == sorted(DOC_PAGES), "docs/ and mkdocs.yml's nav differ"
    assert len(nav) == len(set(nav))


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


@pytest.mark.parametrize("url_path", [p[3] for p in router_pages()])
def test_every_page_has_a_doc_page_and_a_screenshot_the_readme_and_the_doc_show(url_path: str) -> None:
    """The tour: a screenshot of each page of the sidebar (tests/e2e/test_screenshots.py makes them at 1,400 px),
    shown in the README and on the page's own doc page, which is in the nav."""
    shot = SHOTS / f"{url_path}.png"
    assert shot.is_file(), f"no {shot.relative_to(ROOT)}: run TTFT_SCREENSHOTS=1 pytest tests/e2e/test_screenshots.py"
    assert _png_size(shot)[0] == 1400
    assert f"](assets/screenshots/{url_path}.png)" in README
    doc = f"pages/{url_path}.md"
    assert doc in _nav_pages()
    assert f"](../screenshots/{url_path}.png)" in DOC_PAGES[doc]
    assert (DOCS / "screenshots").resolve() == SHOTS.resolve(), "docs/screenshots must be a link to assets/screenshots"
