"""`ttft-planner cost | weights | gpu-fit | prefill | warm-pool`: the Capacity & cost models from the command line.

One module per command in planner/cli/_capacity/, with the options they share in planner/cli/_capacity/options.py.
That package is private so the registry (planner/cli/__init__.py) skips it: COMMANDS is listed here only.
"""

from __future__ import annotations

from planner.cli._capacity.cost import cost
from planner.cli._capacity.gpufit import gpu_fit
from planner.cli._capacity.prefill import prefill
from planner.cli._capacity.warmpool import warm_pool
from planner.cli._capacity.weights import weights

__all__ = ["COMMANDS"]

COMMANDS = [cost, weights, gpu_fit, prefill, warm_pool]
