"""The type gate's configuration (pyproject.toml [tool.mypy]) says what it means.

mypy reads `strict = true` in any section as the global switch, so the strict packages spell out --strict's
flags in their override instead (planner.probes, planner.store, planner.worker). These tests keep that list equal to
mypy's own --strict, and the gate on both packages of the product (app/ under its import name).
"""

import tomllib
from pathlib import Path

from mypy.main import define_options

ROOT = Path(__file__).resolve().parents[1]
STRICT_MODULES = {"planner.probes.*", "planner.store.*", "planner.worker.*"}


def _mypy_config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]


def _as_option(key: str, value: bool) -> tuple[str, bool]:
    """A config key as the Options attribute it sets: `no_implicit_reexport = true` is implicit_reexport False."""
    return (key[3:], not value) if key.startswith("no_") else (key, value)


def test_mypy_checks_planner_and_app():
    """app/ under its import name, ttft_planner_app, through the link `make lint` makes in the mypy_path folder."""
    config = _mypy_config()
    assert set(config["packages"]) == {"planner", "ttft_planner_app"}
    link = Path(config["mypy_path"].replace("$MYPY_CONFIG_FILE_DIR/", "")) / "ttft_planner_app"
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert f"MYPY_LINK := {link.as_posix()}\n" in makefile
    assert "ln -sfn ../../app $(MYPY_LINK)" in makefile and (ROOT / link.parent / "../../app").resolve() == ROOT / "app"
    assert link.parts[0] + "/" in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()  # never committed


def test_no_section_says_strict():
    """`strict` in an override would make every module strict (mypy's config parser sets the global flags)."""
    config = _mypy_config()
    assert "strict" not in config
    assert all("strict" not in o for o in config.get("overrides", []))


def test_strict_packages_get_every_flag_of_strict():
    config = _mypy_config()
    (override,) = [o for o in config["overrides"] if STRICT_MODULES <= set(o["module"])]
    in_force = dict(_as_option(k, v) for k, v in config.items() if isinstance(v, bool))
    in_force.update(_as_option(k, v) for k, v in override.items() if isinstance(v, bool))
    _, _, strict_flags = define_options()
    missing = sorted(dest for dest, value in strict_flags if in_force.get(dest) != value)
    assert not missing, f"--strict's {missing} not set for {sorted(STRICT_MODULES)}"


def test_every_test_module_is_collected():
    """A test module outside pyproject.toml's testpaths never runs (this one was, for a while): each tests/**/test_*.py
    lies under one of them."""
    paths = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"][
        "testpaths"
    ]
    roots = [ROOT / p for p in paths]
    lost = [
        str(f.relative_to(ROOT))
        for f in sorted((ROOT / "tests").rglob("test_*.py"))
        if not any(f == r or r in f.parents for r in roots)
    ]
    assert not lost, f"never collected (add to [tool.pytest.ini_options] testpaths): {lost}"
