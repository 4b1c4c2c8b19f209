"""What-if: replay the team's own request log against candidate deployments in virtual time.

deployment  typed candidate specs (serverless, dedicated + overflow) and the `--deployment` parser
engines     engine=slots|vllm|sglang|llama.cpp: profiles (assets/engines.toml) and a batching step's costs
trace       the request trace (arrivals, tokens), growth scaling, busiest day
replay      the discrete-event replay (heap of slot-free times; no sleeping); a batching engine's goes to
            batched (per replica) and steps (its scheduler, step by step); outcome holds what a replay gives
interval    the prediction interval (speed levels, request jitter, the trace's size)
results     percentiles overall and per hour, tail segments, targets met, GPU-hours, cost; regime its sentence
handoff     what a candidate hands the worksheet (its p95's own segments)
calibrate   measure a live endpoint into a spec (calibration, calibrate_steps); drift and on_record pool the
            spread of every calibration on record
proof       drive the simulated endpoint with the same trace and compare measured vs predicted
"""

from planner.whatif.deployment import Dedicated, Deployment, Serverless, SpecError, parse_deployment
from planner.whatif.replay import CannotKeepUp, Replay, replay
from planner.whatif.results import CandidateResult, Comparison, compare
from planner.whatif.trace import Trace, TraceError, busiest_day, grow, read_trace_file, trace_from_frame

__all__ = [
    "CandidateResult",
    "CannotKeepUp",
    "Comparison",
    "Dedicated",
    "Deployment",
    "Replay",
    "Serverless",
    "SpecError",
    "Trace",
    "TraceError",
    "busiest_day",
    "compare",
    "grow",
    "parse_deployment",
    "read_trace_file",
    "replay",
    "trace_from_frame",
]
