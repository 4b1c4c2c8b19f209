"""The probe worker: schedule math (scheduler), the asyncio runner (the Worker, a composition) and its collaborators
(schedule_loop, prober, buffer, flusher, lease_keeper, loader, status, requests, housekeeping, supervisor,
state_file, team), the cold-reading state machine (cold), probe processes (probe_pool, probe_child, and probe_wire:
the typed, versioned messages between them) and the spool. Its SQL, the vantage lease and retention live in
planner.store.

`ttft-planner worker` runs `planner.worker.runner.run_worker`; it writes the probe rows of registered endpoints and
the server-side RTT samples of its vantage (scheduled targets and the Regions page's requests).

The runner is imported lazily, so a probe process (planner.worker.probe_child)
starts without loading the store.
"""

__all__ = ["Worker", "WorkerConfig", "WorkerStats", "run_worker"]


def __getattr__(name: str) -> object:
    if name in __all__:
        from planner.worker import runner

        return getattr(runner, name)
    raise AttributeError(f"module 'planner.worker' has no attribute {name!r}")
