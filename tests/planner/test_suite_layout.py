"""How the suite is laid out so `make test` stays fast on two cores: the modules that start a real Prometheus share one
xdist group (two Prometheus servers at once compete for the same cores and slow every test beside them)."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_every_module_that_starts_prometheus_is_in_the_prometheus_group():
    starts = [
        p
        for p in sorted(TESTS.rglob("test_*.py"))
        if "running_prometheus(" in p.read_text(encoding="utf-8") and "tests/e2e/" not in p.as_posix()
    ]
    assert starts, "no module starts Prometheus: the scan is broken"
    ungrouped = [
        str(p.relative_to(TESTS))
        for p in starts
        if 'pytestmark = pytest.mark.xdist_group("prometheus")' not in p.read_text(encoding="utf-8")
    ]
    assert not ungrouped, f'add pytestmark = pytest.mark.xdist_group("prometheus") to {ungrouped}'
