"""calibrate() run against a simulated server in virtual time: the probes, the sweeps and the simulator share one
virtual clock, so a calibration of minutes takes a moment and gives the same answer every run."""

from __future__ import annotations

from planner.probes.ttft import ProbeTarget
from planner.simulator import SimulatorConfig
from planner.simulator.virtual import run_virtual, virtual_clock_ns, virtual_simulator
from planner.whatif.calibrate import Calibration, calibrate

__all__ = ["calibrate_in_virtual_time"]


def calibrate_in_virtual_time(cfg: SimulatorConfig, **kw) -> Calibration:
    """calibrate() against a simulator with `cfg` (keyword arguments go to calibrate)."""

    async def scenario() -> Calibration:
        async with virtual_simulator(cfg) as sim:
            target = ProbeTarget(base_url=sim.url, model="m")
            return await calibrate(target, client=sim.client, clock_ns=virtual_clock_ns, **kw)

    return run_virtual(scenario())
