"""The Prometheus reader (planner.sources.prometheus.ttft_by_hour) against the hostile server.

A good Prometheus answers /api/v1/series with model m1's series and every range query with one sample an hour. A
value goes in every slot of those answers (`SLOTS`: the whole answer, `status`, `data`, a label's value, the result,
a series, its values, a sample, its time, its value); a body or a transform replaces the series answer, then (after a
good one) the range answers; a time is a sample's time. Each is one read with a small deadline and a 4 MiB cap: READ
when its hours are sane, REFUSED when it is one PrometheusError line.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from planner.errors import PlannerError
from planner.sources.prometheus import HOUR_MS, ttft_by_hour
from tests.support.hostile.corpus import HOLE, PROM_TOKEN, Case, embed, gzip_bomb, zstd_bomb
from tests.support.hostile.outcome import READ, WRONG, Env, Outcome, one_line, sane_number
from tests.support.hostile.server import Answer

__all__ = ["SLOTS", "prometheus_accepts", "prometheus_read"]

NOW_MS = 486_111 * HOUR_MS  # on an hour
CAP_BYTES = 4 << 20
_H = HOLE
_SAMPLE_T = NOW_MS / 1000
_SERIES = {"__name__": "vllm:time_to_first_token_seconds_count", "model_name": "m1"}


def _ok(data: Any) -> Any:
    return {"status": "success", "data": data}


def _matrix(values: Any, metric: Any = None) -> Any:
    return _ok({"resultType": "matrix", "result": [{"metric": metric or {}, "values": values}]})


GOOD_SERIES = _ok([_SERIES])
GOOD_RANGE = _matrix([[_SAMPLE_T, "0.25"]])

# (where: "series" | "query_range", template)
SLOTS: list[tuple[str, Any]] = [
    ("series", _H),
    ("series", {"status": _H, "data": [_SERIES]}),
    ("series", _ok(_H)),
    ("series", _ok([{"__name__": "vllm:time_to_first_token_seconds_count", "model_name": _H}])),
    ("series", {"status": "error", "errorType": _H, "error": _H}),
    ("query_range", _ok({"resultType": "matrix", "result": _H})),
    ("query_range", _ok({"resultType": "matrix", "result": [_H]})),
    ("query_range", _matrix(_H)),
    ("query_range", _matrix([_H])),
    ("query_range", _matrix([[_H, "1"]])),
    ("query_range", _matrix([[_SAMPLE_T, _H]])),
]
_ECHO = b'{"status": "error", "errorType": "unauthorized", "error": "bad token {echo}"}'


def prometheus_accepts(case: Case) -> bool:
    return case.role not in ("dsn", "pasted")


def _answering(series: bytes, query_range: bytes) -> Callable[[str], bytes]:
    def body(path: str) -> bytes:
        return series if path.endswith("series") else query_range

    return body


def _urls(case: Case, env: Env) -> list[tuple[str, str]]:
    """(what it holds, base URL) of every Prometheus the case makes."""
    serve = env.server.serve
    series, ranged = json.dumps(GOOD_SERIES).encode(), json.dumps(GOOD_RANGE).encode()
    if case.role == "body":
        assert case.body is not None
        return [
            ("the series answer", serve(Answer(_answering(case.body, ranged)))),
            ("the range answers", serve(Answer(_answering(series, case.body)))),
        ]
    if case.role == "transform":
        assert case.transform is not None
        return [
            ("the series answer", serve(Answer(_answering(case.transform(series), ranged)))),
            ("the range answers", serve(Answer(_answering(series, case.transform(ranged))))),
        ]
    if case.role in ("value", "time"):
        value = case.value if case.role == "value" else case.epoch_s
        slots = SLOTS if case.role == "value" else [("query_range", _matrix([[_H, "1"]]))]
        out = []
        for where, template in slots:
            text = embed(template, value).encode()
            answer = _answering(text, ranged) if where == "series" else _answering(series, text)
            out.append((json.dumps(template).replace(json.dumps(HOLE), "…"), serve(Answer(answer))))
        return out
    if case.role == "echo":
        return [("an error echoing the token", serve(Answer(_ECHO, status=401, echo=case.echo)))]
    if case.behaviour == "black_hole":
        return [("a black hole", f"http://127.0.0.1:{env.black_hole.port}")]
    if case.behaviour == "never_accepts":
        return [("a port that never accepts", f"http://127.0.0.1:{env.never_accepts}")]
    answer = Answer(b'{"status": "success", "data": [')
    if case.behaviour in ("drip", "huge"):
        answer.stream = str(case.behaviour)
    else:
        answer.body = gzip_bomb() if case.behaviour == "gzip_bomb" else zstd_bomb()
        answer.headers["content-encoding"] = "gzip" if case.behaviour == "gzip_bomb" else "zstd"
    return [(str(case.behaviour), serve(answer))]


def prometheus_read(case: Case, env: Env, deadline_s: float) -> list[Outcome]:
    """Three hours of TTFT from each Prometheus the case makes."""
    out = []
    for held, url in _urls(case, env):
        try:
            hours = ttft_by_hour(
                url, NOW_MS - 3 * HOUR_MS, NOW_MS, bearer_token=PROM_TOKEN, deadline_s=deadline_s, max_bytes=CAP_BYTES
            )
        except PlannerError as exc:
            out.append(one_line(str(exc)))
            continue
        except Exception as exc:
            exc.add_note(f"a Prometheus answering {held}")
            raise
        figures = [(h.requests, h.p50_ms, h.p95_ms, h.waiting_mean, h.queue_p95_ms) for h in hours]
        if not all(sane_number(x) for row in figures for x in row):
            out.append(Outcome(WRONG, f"hours read from {held} hold {figures!r}"))
        else:
            out.append(
                Outcome(READ, f"{len(hours)} hours, {sum(h.requests for h in hours):g} requests", [repr(figures)])
            )
    return out
