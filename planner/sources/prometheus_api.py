"""Prometheus' HTTP API read as untrusted data: each answer bounded (planner.inputs.http_read) and checked to be the
shape Prometheus documents before a number of it is used.

`PrometheusApi(base_url, …)` holds one client and one deadline over every query made through it (a sync's several
queries share it). `series(match)` is /api/v1/series (a list of label sets, each label a string);
`range(query, start_s, end_s)` is /api/v1/query_range (a matrix: series, each with `values`, pairs of a sample time
in seconds and a value string), as {time ms: value}, non-finite values (a quantile of no requests is NaN) left out.

Anything else — not JSON, JSON nested thousands deep, a list where the object belongs, `status` without `data`, a
result that is not a list of objects, a sample time that is not a time from 1970 to 2100 (NaN, 1e308), a value that
is not a number ("abc") or is beyond any engine's figure — is a PrometheusError: one line naming the server and what
was wrong.
"""

from __future__ import annotations

import json
import math
import reprlib
import time
from collections.abc import Callable
from typing import Any

import httpx

from planner.errors import PlannerError
from planner.inputs.http_read import DEFAULT_CONNECT_S, HttpReadError, read_capped
from planner.inputs.untrusted import mask_secret
from planner.inputs.urls import UrlError, check_url, redact_url
from planner.logs.records import MAX_EPOCH_MS

__all__ = [
    "DEFAULT_DEADLINE_S",
    "MAX_ANSWER_BYTES",
    "MAX_SAMPLE_VALUE",
    "PrometheusApi",
    "PrometheusError",
]

DEFAULT_DEADLINE_S = 60.0  # every query of one read together (a 7-day backfill is six range queries)
MAX_ANSWER_BYTES = 32 << 20  # one answer: a week of hourly points for thousands of series is a few MB
MAX_SAMPLE_VALUE = 1e12  # a count or a time in seconds past this is no engine's figure (and × 1000 stays finite)
_QUOTE = reprlib.Repr()  # an odd value quoted in a message, cut to a few items and characters at any size or depth
_QUOTE.maxlevel, _QUOTE.maxlist, _QUOTE.maxdict = 2, 3, 3
_QUOTE.maxstring = _QUOTE.maxother = _QUOTE.maxlong = 40


class PrometheusError(PlannerError, RuntimeError):
    """Prometheus cannot answer: unreachable, too slow, too large, not its API's answer, an error from the query, or
    no such metric or label value. The message is one line naming the server."""


_JSON_KINDS = {list: "list", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}


def _quoted(value: Any) -> str:
    """A short quote of a value read from the server, whatever its size or depth."""
    return " ".join(_QUOTE.repr(value).split())


def _said(value: Any) -> str:
    """What the server said in a field, on one line and cut to 200 characters."""
    text = " ".join(value.split()) if isinstance(value, str) else _quoted(value)
    return text if len(text) <= 200 else text[:199] + "…"


class PrometheusApi:
    """Queries to Prometheus at `base_url` (checked first; PrometheusError when it is not a usable URL) with the
    bearer token a guarded server wants: each answer at most `max_bytes`, all of them within `deadline_s` seconds
    (monotonic `mono_s`), each connection within `connect_s`. A context manager (closes its client)."""

    def __init__(
        self,
        base_url: str,
        *,
        bearer_token: str | None = None,
        deadline_s: float = DEFAULT_DEADLINE_S,
        max_bytes: int = MAX_ANSWER_BYTES,
        connect_s: float = DEFAULT_CONNECT_S,
        mono_s: Callable[[], float] = time.monotonic,
    ) -> None:
        try:
            base_url = check_url(base_url, what="the Prometheus URL", allow_credentials=True)
        except UrlError as exc:
            raise PrometheusError(str(exc)) from None
        headers = {"Authorization": f"Bearer {bearer_token}"} if bearer_token else {}
        self.where = f"Prometheus at {redact_url(base_url.rstrip('/'))}"
        self._token = bearer_token
        self.deadline_s = deadline_s
        self.max_bytes = max_bytes
        self.connect_s = connect_s
        self._mono_s = mono_s
        self._started_s = mono_s()
        self._client = httpx.Client(base_url=base_url.rstrip("/"), headers=headers)

    def __enter__(self) -> PrometheusApi:
        return self

    def __exit__(self, *exc: object) -> None:
        self._client.close()

    def _fail(self, what: str) -> PrometheusError:
        """`what` went wrong, said of this server (a token the server echoed masked)."""
        return PrometheusError(mask_secret(f"{self.where} {what}", self._token))

    def _data(self, path: str, params: dict[str, Any]) -> Any:
        """The `data` of a successful answer to GET `path`."""
        try:
            got = read_capped(
                self._client,
                "GET",
                path,
                params=params,
                server=self.where,
                deadline_s=self.deadline_s,
                max_bytes=self.max_bytes,
                connect_s=self.connect_s,
                started_s=self._started_s,
                mono_s=self._mono_s,
            )
        except HttpReadError as exc:  # an error of the client may quote a header: the token never shows
            raise PrometheusError(mask_secret(str(exc), self._token)) from None
        try:
            body = json.loads(got.content)
        except RecursionError:
            raise self._fail(f"answered {path} with JSON nested too deeply: not Prometheus' answer") from None
        except ValueError:  # not JSON, or not UTF-8
            raise self._fail(f"answered {path} with {got.status_code}, not Prometheus' JSON") from None
        if not isinstance(body, dict):
            kind = _JSON_KINDS.get(type(body), "value")
            raise self._fail(f"answered {path} with a JSON {kind}, not Prometheus' answer object")
        if body.get("status") != "success":
            said = " ".join(_said(body.get(k, "")) for k in ("errorType", "error")).strip()
            raise self._fail(f"refused the query ({got.status_code}): {said or 'no reason given'}")
        if "data" not in body:
            raise self._fail(f"answered {path} with status success but no data")
        return body["data"]

    def series(self, match: str) -> list[dict[str, str]]:
        """The label sets of the series `match` selects."""
        data = self._data("/api/v1/series", {"match[]": match})
        if not isinstance(data, list) or not all(
            isinstance(s, dict) and all(isinstance(v, str) for v in s.values()) for s in data
        ):
            raise self._fail(f"answered /api/v1/series with {_quoted(data)}, not a list of label sets")
        return data

    def range(self, query: str, start_s: float, end_s: float, step_s: int = 3600) -> dict[int, float]:
        """{evaluation time ms: value} of `query` from `start_s` to `end_s` (seconds) every `step_s`, over every series
        of the result (the last one wins a shared time: the queries here are summed to one series). A value that is
        not finite, or negative, is left out, its time read as unknown: every figure read here (a count's gain, a
        quantile, a gauge) is ≥ 0, and a negative gain is a counter reset between the two hours compared."""
        data = self._data("/api/v1/query_range", {"query": query, "start": start_s, "end": end_s, "step": step_s})
        result = data.get("result") if isinstance(data, dict) else None
        if not isinstance(result, list) or not all(isinstance(s, dict) for s in result):
            raise self._fail(f"answered a range query with {_quoted(data)}, not a matrix (a list of series)")
        out: dict[int, float] = {}
        for series in result:
            values = series.get("values", [])
            if not isinstance(values, list):
                raise self._fail(f"answered a series whose values are {_quoted(values)}, not a list of samples")
            for sample in values:
                t_ms, value = self._sample(sample)
                if math.isfinite(value) and value >= 0:
                    out[t_ms] = value
        return out

    def _sample(self, sample: Any) -> tuple[int, float]:
        """(time ms, value) of a [time s, "value"] pair; PrometheusError naming what is wrong with it."""
        if not isinstance(sample, list) or len(sample) != 2:
            raise self._fail(f"answered a sample {_quoted(sample)}, not a [time, value] pair")
        t, v = sample
        if isinstance(t, bool) or not isinstance(t, int | float) or not 0 <= t * 1000 < MAX_EPOCH_MS:
            raise self._fail(f"answered a sample time {_quoted(t)}, not a time from 1970 to 2100 in seconds")
        if isinstance(v, bool) or not isinstance(v, str | int | float):
            raise self._fail(f"answered a sample value {_quoted(v)}, not a number")
        try:
            value = float(v)
        except (ValueError, OverflowError):
            raise self._fail(f"answered a sample value {_quoted(v)}, not a number") from None
        if math.isfinite(value) and abs(value) > MAX_SAMPLE_VALUE:
            raise self._fail(f"answered a sample value {value:g}: beyond any engine's count or time")
        return int(round(t * 1000)), value
