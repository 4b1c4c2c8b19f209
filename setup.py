"""The wheel's layout; the metadata is in pyproject.toml.

`planner` ships as itself; the dashboard's folder `app/` ships as the package `ttft_planner_app` (so the wheel does not
claim the common top-level name `app`); and the top-level `assets/` (kept there for development) ships inside the
planner package as `planner/assets/`. pyproject.toml alone cannot say the last one. `planner.asset_files.assets_dir()`
finds either place, so editable installs, PYTHONPATH runs and wheels read the same files. The dashboard's name is not
its folder's, so it runs from an install only: `pip install -e .` in a checkout (`make` does it), or the wheel.
"""

from setuptools import find_namespace_packages, setup

APP = "ttft_planner_app"  # the import name of the folder app/ (its modules import `ttft_planner_app.…`)

setup(
    packages=[
        *find_namespace_packages(include=["planner", "planner.*"], exclude=["*.__pycache__"]),
        APP,
        *(f"{APP}.{p}" for p in find_namespace_packages(where="app", exclude=["__pycache__", "*.__pycache__"])),
        "planner.assets",
        "planner.assets.sample_logs",
    ],
    package_dir={APP: "app", "planner.assets": "assets"},
)
