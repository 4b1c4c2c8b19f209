"""The wheel's layout; the metadata is in pyproject.toml.

`planner` and `app` ship as packages, and the top-level `assets/` (kept there for development) ships inside the
planner package as `planner/assets/`, which pyproject.toml alone cannot say. `planner.asset_files.assets_dir()` finds
either place, so editable installs, PYTHONPATH runs and wheels read the same files.
"""

from setuptools import find_namespace_packages, setup

setup(
    packages=[
        *find_namespace_packages(include=["planner", "planner.*", "app", "app.*"], exclude=["*.__pycache__"]),
        "planner.assets",
        "planner.assets.sample_logs",
    ],
    package_dir={"planner.assets": "assets"},
)
