"""The probe worker: schedule math, the asyncio runner, the vantage lease, cold readings, retention.

`ttft-planner worker` runs `planner.worker.runner.run_worker`; it is the only
writer of probe rows. See the modules for each idea.

The runner is imported lazily, so a probe process (planner.worker.probe_child)
starts without loading the store.
"""

__all__ = ["Worker", "WorkerConfig", "WorkerStats", "run_worker"]


def __getattr__(name: str):
    if name in __all__:
        from planner.worker import runner

        return getattr(runner, name)
    raise AttributeError(f"module 'planner.worker' has no attribute {name!r}")
