"""The probe worker: schedule math, the asyncio runner, the vantage lease, cold readings, retention.

`ttft-planner worker` runs `planner.worker.runner.run_worker`; it is the only
writer of probe rows. See the modules for each idea.
"""

from planner.worker.runner import Worker, WorkerConfig, WorkerStats, run_worker

__all__ = ["Worker", "WorkerConfig", "WorkerStats", "run_worker"]
