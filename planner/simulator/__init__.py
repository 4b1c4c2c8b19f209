"""A local streaming LLM endpoint with real queueing, cold start, prefill and errors (labelled simulated).

It speaks OpenAI chat/completions and Anthropic Messages, and it is the product's
built-in demo target and the test suite's server. Public surface:
`SimulatorConfig`, `build_app`, `running_simulator`, `serve_forever`.
"""

from planner.simulator.app import SIMULATED_HEADERS, build_app
from planner.simulator.config import OFFICE_LOAD_CURVE, SimulatorConfig, parse_load_curve
from planner.simulator.runner import SimulatorStartError, running_simulator, serve_forever

__all__ = [
    "OFFICE_LOAD_CURVE",
    "SIMULATED_HEADERS",
    "SimulatorConfig",
    "SimulatorStartError",
    "build_app",
    "parse_load_curve",
    "running_simulator",
    "serve_forever",
]
