"""`ttft-planner capacity cost | gpu-fit | prefill | warm-pool | weights`: the Capacity & cost page's models from the
command line, in one group as the page groups them.

One module per command in planner/cli/_capacity/, with the options they share in planner/cli/_capacity/options.py.
That package is private so the registry (planner/cli/__init__.py) skips it: COMMANDS lists the group here only. The
old top-level names (`ttft-planner cost`, …) still work until planner.cli._renamed.REMOVED_IN, with a note.
"""

from __future__ import annotations

import click

from planner.cli._capacity.cost import cost
from planner.cli._capacity.gpufit import gpu_fit
from planner.cli._capacity.prefill import prefill
from planner.cli._capacity.warmpool import warm_pool
from planner.cli._capacity.weights import weights

__all__ = ["COMMANDS", "capacity"]


@click.group()
def capacity() -> None:
    """Capacity & cost models: break-even cost, weight loading, GPU fit, prefill rate, warm-pool sizing.

    The same models as the dashboard's Capacity & cost page, one command per tab; each prints the page's figures
    (--json: one JSON object).
    """


for _command in (cost, gpu_fit, prefill, warm_pool, weights):
    capacity.add_command(_command)

COMMANDS = [capacity]
