"""Load-sweep tables: one row per `ttft-planner sweep` run (its provenance) and one per load step.

A run records what was swept (endpoint, model, protocol, arrivals, prompt and output tokens, step
duration, seed), where from (vantage) and with which version, plus the knee it found; a step holds
that load's TTFT percentiles with n, error rate, offered and achieved throughput, send lag and
client CPU per request. Never the API key: only the NAME of its variable, as for probes.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import Field, SQLModel, col, select

from planner.lazy import lazy_module
from planner.store.database import session
from planner.sweep.run import SweepResult

if TYPE_CHECKING:
    import pandas as pd
else:  # imported on first use: the worker stores rows and starts without it
    pd = lazy_module("pandas")

__all__ = ["SweepRunRow", "SweepStepRow", "load_sweep_runs", "load_sweep_steps", "store_sweep"]


class SweepRunRow(SQLModel, table=True):
    """One sweep run and where its figures came from."""

    __tablename__ = "sweep_run"

    id: int | None = Field(default=None, primary_key=True)
    base_url: str = Field(max_length=500)
    model: str = Field(max_length=200)
    protocol: str = Field(max_length=40)
    api_key_env: str = Field(default="", max_length=120)
    mode: str = Field(max_length=20)  # poisson | constant | concurrency
    prompt_tokens: int
    max_tokens: int
    step_duration_s: float
    target_p95_ms: float | None = None
    knee_load: float | None = None  # last load whose p95 stayed within the target
    over_load: float | None = None  # first load over it
    seed: int = 0
    vantage: str = Field(default="", max_length=120)
    tool_version: str = Field(default="", max_length=40)
    client_cpu_ms_per_request: float = 0.0
    note: str = Field(default="", max_length=500)
    started_at_ms: int = Field(sa_type=sa.BigInteger, index=True)
    finished_at_ms: int = Field(sa_type=sa.BigInteger)


class SweepStepRow(SQLModel, table=True):
    """One load step of a sweep run (times in ms; throughput in requests/s)."""

    __tablename__ = "sweep_step"

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="sweep_run.id", index=True)
    step_index: int
    load: float  # requests/s (poisson, constant) or concurrent requests (concurrency)
    n_sent: int
    n_ok: int
    ttft_p50_ms: float | None = None
    ttft_p95_ms: float | None = None
    ttft_p99_ms: float | None = None
    offered_rps: float
    achieved_rps: float
    send_lag_p95_ms: float
    wall_s: float
    client_cpu_ms_per_request: float
    errors_json: str = Field(default="{}", max_length=2000)  # {"error_class": count}


def store_sweep(engine: Engine, result: SweepResult, *, vantage: str, tool_version: str, note: str = "") -> int:
    """Store a planner.sweep.SweepResult (run + steps in one transaction); returns the run id."""
    spec, t = result.spec, result.spec.target
    run = SweepRunRow(
        base_url=t.base_url,
        model=t.model,
        protocol=t.protocol,
        api_key_env=t.api_key_env,
        mode=spec.mode,
        prompt_tokens=t.prompt_tokens,
        max_tokens=t.max_tokens,
        step_duration_s=spec.step_duration_s,
        target_p95_ms=spec.target_p95_ms,
        knee_load=result.knee_load,
        over_load=result.over_load,
        seed=spec.seed,
        vantage=vantage[:120],
        tool_version=tool_version[:40],
        client_cpu_ms_per_request=result.client_cpu_ms_per_request,
        note=note[:500],
        started_at_ms=result.started_at_ms,
        finished_at_ms=result.finished_at_ms,
    )
    with session(engine) as s:
        s.add(run)
        s.flush()
        assert run.id is not None  # assigned by the flush
        for st in result.steps:
            s.add(
                SweepStepRow(
                    run_id=run.id,
                    step_index=st.index,
                    load=st.load,
                    n_sent=st.n_sent,
                    n_ok=st.n_ok,
                    ttft_p50_ms=st.ttft_p50_ms,
                    ttft_p95_ms=st.ttft_p95_ms,
                    ttft_p99_ms=st.ttft_p99_ms,
                    offered_rps=st.offered_rps,
                    achieved_rps=st.achieved_rps,
                    send_lag_p95_ms=st.send_lag_p95_ms,
                    wall_s=st.wall_s,
                    client_cpu_ms_per_request=st.client_cpu_ms_per_request,
                    errors_json=json.dumps(st.errors_by_class)[:2000],
                )
            )
        run_id: int = run.id
    return run_id


def load_sweep_runs(engine: Engine) -> pd.DataFrame:
    """Every sweep run, newest first (one row per run, the columns of SweepRunRow)."""
    with session(engine) as s:
        rows = s.exec(select(SweepRunRow).order_by(col(SweepRunRow.started_at_ms).desc())).all()
        return pd.DataFrame([r.model_dump() for r in rows], columns=list(SweepRunRow.model_fields))


def load_sweep_steps(engine: Engine, run_id: int) -> pd.DataFrame:
    """The steps of one run in load order, with error_rate (failed ÷ sent) added."""
    with session(engine) as s:
        rows = s.exec(
            select(SweepStepRow).where(SweepStepRow.run_id == run_id).order_by(col(SweepStepRow.step_index))
        ).all()
        df = pd.DataFrame([r.model_dump() for r in rows], columns=list(SweepStepRow.model_fields))
    df["error_rate"] = (
        ((df["n_sent"] - df["n_ok"]) / df["n_sent"].where(df["n_sent"] > 0)).fillna(0.0) if len(df) else []
    )
    return df
