"""Calibrations on record: each `ttft-planner calibrate` run's prefill rounds per endpoint (issue 45).

One row per calibration: the endpoint (base URL, model), when it ended (UTC epoch ms), its rounds' prefill rates
(tokens/s, in the order measured), the spec it printed and, for a batching engine, its step-model fit as JSON
(planner.whatif.calibrate_steps.StepFit: step costs, step times by running decodes, residuals). planner.whatif.drift
pools the rounds of every calibration of an endpoint into the speed spread of the next spec. Never an API key: a
calibration keeps no credentials.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import Field, SQLModel, col, select

from planner.store.database import session
from planner.store.endpoints import EndpointRow

__all__ = ["CalibrationRow", "calibration_history", "endpoint_names_of", "recent_fits", "record_calibration"]

_MAX_KEPT = 200  # calibrations of one endpoint read back, newest first: drift older than that is history enough


class CalibrationRow(SQLModel, table=True):
    """One calibration run: its endpoint, when it ended, its rounds' prefill rates and the spec it printed."""

    __tablename__ = "calibration"

    id: int | None = Field(default=None, primary_key=True)
    base_url: str = Field(max_length=500, index=True)
    model: str = Field(max_length=200)
    at_ms: int = Field(sa_type=sa.BigInteger)
    rates_json: str = Field(sa_type=sa.Text)
    spec: str = Field(max_length=2000)
    fit_json: str | None = Field(default=None, sa_type=sa.Text)


def _key(base_url: str) -> str:
    return base_url.rstrip("/")


def record_calibration(
    engine: Engine,
    base_url: str,
    model: str,
    at_ms: int,
    rates: Sequence[float],
    spec: str,
    fit: dict[str, Any] | None = None,
) -> None:
    """Keep one calibration (its round prefill rates, tokens/s; non-finite or non-positive ones are left out), and a
    batching engine's step fit (JSON-ready)."""
    kept = [float(r) for r in rates if math.isfinite(r) and r > 0]
    with session(engine) as s:
        s.add(
            CalibrationRow(
                base_url=_key(base_url)[:500],
                model=model[:200],
                at_ms=int(at_ms),
                rates_json=json.dumps(kept),
                spec=spec[:2000],
                fit_json=None if fit is None else json.dumps(fit),
            )
        )


def calibration_history(engine: Engine, base_url: str, model: str) -> list[tuple[int, list[float]]]:
    """(UTC epoch ms, round prefill rates) of the endpoint's calibrations on record, oldest first (the newest
    _MAX_KEPT)."""
    q = (
        select(CalibrationRow.at_ms, CalibrationRow.rates_json)
        .where(CalibrationRow.base_url == _key(base_url), CalibrationRow.model == model)
        .order_by(col(CalibrationRow.at_ms).desc())
        .limit(_MAX_KEPT)
    )
    with session(engine) as s:
        rows = s.exec(q).all()
    out = []
    for at_ms, rates_json in reversed(rows):
        try:
            rates = [float(r) for r in json.loads(rates_json)]
        except (ValueError, TypeError):
            continue  # a row another tool wrote badly: left out, never fatal
        out.append((int(at_ms), rates))
    return out


def recent_fits(engine: Engine, limit: int = 50) -> list[tuple[str, str, int, str, dict[str, Any]]]:
    """(base URL, model, UTC epoch ms, spec, step fit) of the newest calibrations that kept a step fit, newest first.
    A fit that is not a JSON object is left out."""
    q = (
        select(CalibrationRow)
        .where(col(CalibrationRow.fit_json).is_not(None))
        .order_by(col(CalibrationRow.at_ms).desc())
        .limit(limit)
    )
    with session(engine) as s:
        rows = s.exec(q).all()
    out = []
    for row in rows:
        try:
            fit = json.loads(row.fit_json or "")
        except ValueError:
            continue
        if isinstance(fit, dict):
            out.append((row.base_url, row.model, int(row.at_ms), row.spec, fit))
    return out


def endpoint_names_of(engine: Engine, base_url: str, model: str) -> list[str]:
    """The names of the registered endpoints at `base_url` serving `model` (their probe history is this one's)."""
    q = select(EndpointRow.name).where(EndpointRow.base_url == _key(base_url), EndpointRow.model == model)
    with session(engine) as s:
        return list(s.exec(q).all())
