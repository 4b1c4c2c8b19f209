"""One rule per numeric input: the range a number must lie in, checked the same way wherever it comes in.

A `Rule` is a range (either end closed or open) with a unit, for a whole number or a real one. Every rule is finite at
both ends: a value past the top is never a plan (a 9-quintillion-slot pool, a 1e308 s cold start) and overflows
the arithmetic downstream, and a non-zero value below MIN_MAGNITUDE (1e-320, a denormal) turns a division into
inf. The CLI's options (planner/cli/_common.py turns a rule into a click type), the pages' number inputs
(ttft_planner_app.widgets.number_input_for takes its bounds from one), the what-if spec keys
(planner/whatif/deployment.py), the simulator's settings, the worker's options and stored rows (an alert rule,
an endpoint) all check their numbers with the rules named here, so a value refused in one place is refused, with
the same words, in every other.

    >>> PORT.check(8080, "--metrics-port")
    8080
    >>> PORT.problem(-1)
    'must be a whole number from 1 to 65,535, got -1'
    >>> REQUESTS_PER_S.problem(float("inf"))
    'must be a number from 0.001 to 10,000 requests/s; inf is not a finite number'
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.errors import PlannerError

__all__ = [
    "ALERT_CLEAR_MARGIN_PCT",
    "ALERT_EVERY_S",
    "ALERT_FOR_MIN",
    "ALERT_MIN_N",
    "ALERT_THRESHOLD",
    "ALERT_WINDOW_MIN",
    "ARRIVALS_PER_HOUR",
    "BATCHED_TOKENS",
    "CHECKPOINT_GB",
    "COLD_IDLE_S",
    "CONCURRENCY",
    "CONTEXT_TOKENS",
    "DURATION_MS",
    "DURATION_S",
    "EQUIVALENCE_MARGIN_MS",
    "FRACTION",
    "GPUS_PER_REPLICA",
    "GROWTH_FACTOR",
    "HELD_ROWS",
    "KV_BLOCK_TOKENS",
    "KV_CACHE_BLOCKS",
    "LATITUDE_DEG",
    "LEASE_TTL_S",
    "LONGITUDE_DEG",
    "MAX_MAGNITUDE",
    "MAX_REQUESTS_PER_STEP",
    "MFU",
    "MIN_MAGNITUDE",
    "MIN_REPLICAS",
    "MODEL_HEADS",
    "MODEL_HEAD_DIM",
    "MODEL_LAYERS",
    "MODEL_PARAMS_B",
    "MODEL_WIDTH",
    "OutOfRange",
    "PERCENT",
    "PORT",
    "PORT_OR_ANY",
    "PROBE_INTERVAL_S",
    "PROBE_MAX_TOKENS",
    "PROBE_PROCESSES",
    "PROBE_TIMEOUT_S",
    "PROMETHEUS_HOURS",
    "PROMPT_TOKENS",
    "PROMPT_TOKENS_P95",
    "REPLAY_GROWTH",
    "REPLICAS",
    "REQUESTS_PER_S",
    "RETENTION_DAYS",
    "RTT_INTERVAL_S",
    "RTT_SAMPLES",
    "Rule",
    "SCALE_DOWN_WINDOW_S",
    "SEED",
    "SEQUENCES",
    "SERVICE_S",
    "SLOPE_MS_PER_1K_TOKENS",
    "SLOTS",
    "SOURCE_SYNC_S",
    "STEP_MS",
    "SWITCH",
    "TARGET_MS",
    "TOKENS_PER_HOUR",
    "TOKENS_PER_MIN",
    "TOKENS_PER_S",
    "TOKEN_RATIO",
    "USABLE_HBM_FRACTION",
    "USD_PER_HOUR",
    "USD_PER_MTOK",
    "parse_list",
]

# Every number is finite and within these magnitudes unless its rule is tighter.
MAX_MAGNITUDE = 1e12
MIN_MAGNITUDE = 1e-9


class OutOfRange(PlannerError, ValueError):
    """A number its rule refuses. `name` is the input it came in as (an option, a spec key), `reason` the rest of
    the sentence ("must be a whole number from 1 to 65,535, got -1")."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"{name} {reason}" if name else reason)
        self.name = name
        self.reason = reason


def _num(x: float) -> str:
    """1000 → '1,000'; 0.01 → '0.01'; 1e12 → '1,000,000,000,000'."""
    return f"{int(x):,}" if x == int(x) else f"{x:g}"


@dataclass(frozen=True)
class Rule:
    """A number from `lo` to `hi` in `unit` (inclusive; `lo_open` / `hi_open`: strictly inside that end);
    `integer`: a whole number. Non-finite values, and non-zero values smaller in size than MIN_MAGNITUDE, are
    always refused."""

    lo: float
    hi: float
    unit: str = ""
    integer: bool = False
    lo_open: bool = False
    hi_open: bool = False

    def describe(self) -> str:
        """The range in words: "a whole number from 1 to 65,535", "a number greater than 0 and at
        most 3,600 s"."""
        unit = f" {self.unit}" if self.unit else ""
        kind = "a whole number" if self.integer else "a number"
        lo = f"greater than {_num(self.lo)}" if self.lo_open else f"at least {_num(self.lo)}"
        hi = f"less than {_num(self.hi)}" if self.hi_open else f"at most {_num(self.hi)}"
        if not (self.lo_open or self.hi_open):
            return f"{kind} from {_num(self.lo)} to {_num(self.hi)}{unit}"
        return f"{kind} {lo} and {hi}{unit}"

    def problem(self, value: object, shown: str | None = None) -> str | None:
        """Why `value` breaks the rule ("must be …, got …", with `shown` as the value's text), or None when it
        keeps it. Never raises."""
        if shown is None:
            shown = repr(value) if isinstance(value, str) else str(value)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"must be {self.describe()}, got {shown}"
        if isinstance(value, float) and not math.isfinite(value):
            return f"must be {self.describe()}; {shown} is not a finite number"
        if self.integer and isinstance(value, float):  # 8.0 too: the code downstream counts with it
            return f"must be {self.describe()}, got {shown}"
        too_low = value <= self.lo if self.lo_open else value < self.lo
        too_high = value >= self.hi if self.hi_open else value > self.hi
        if too_low or too_high:
            return f"must be {self.describe()}, got {shown}"
        if value != 0 and abs(value) < MIN_MAGNITUDE:
            return f"must be 0 or at least {MIN_MAGNITUDE:g} in size ({self.describe()}), got {shown}"
        return None

    def check(self, value: object, name: str = "") -> float | int:
        """`value` (an int for an integer rule) when it keeps the rule; raises OutOfRange naming `name`."""
        why = self.problem(value)
        if why is not None:
            raise OutOfRange(name, why)
        assert isinstance(value, (int, float))  # problem() refused everything else
        return int(value) if self.integer else float(value)

    def parse(self, text: str, name: str = "") -> float | int:
        """The number in `text` ("1000", "1_000", "2.5e3"; whole numbers only for an integer rule), checked;
        raises OutOfRange naming `name`, with the text as given."""
        raw = text.strip()
        try:
            value: float | int = int(raw) if self.integer else float(raw)
        except ValueError:
            kind = "a whole number" if self.integer else "a number"
            raise OutOfRange(name, f"{raw!r} is not {kind}: it must be {self.describe()}") from None
        why = self.problem(value, repr(raw))
        if why is not None:
            raise OutOfRange(name, why)
        return value


def parse_list(
    text: str, rule: Rule, name: str = "", *, max_items: int = 100, keep_order: bool = False
) -> tuple[float | int, ...]:
    """'1,2,4' → (1, 2, 4): every comma-separated item checked by `rule`, without repeats, ascending (or, with
    `keep_order`, in the order given).

    Raises OutOfRange naming `name` and the bad item, or when the list is empty or longer than `max_items`.
    """
    items = [p for p in (s.strip() for s in text.split(",")) if p]
    if not items:
        raise OutOfRange(name, f"needs at least one number ({rule.describe()}), e.g. 1,2,4")
    if len(items) > max_items:
        raise OutOfRange(name, f"takes at most {max_items} numbers, got {len(items)}")
    out = [rule.parse(item, name) for item in items]
    return tuple(dict.fromkeys(out)) if keep_order else tuple(sorted(set(out)))


PORT = Rule(1, 65_535, integer=True)
PROMPT_TOKENS = Rule(1, 2_000_000, integer=True, unit="tokens")
PORT_OR_ANY = Rule(0, 65_535, integer=True)  # 0: let the system pick a free port
SEED = Rule(0, 2**32 - 1, integer=True)
USD_PER_MTOK = Rule(0, 1_000_000, "USD/Mtok")  # a price per million tokens
FRACTION = Rule(0, 1)
# Load steps of `sweep` and `calibrate`: open-loop arrival rates and closed-loop concurrencies.
REQUESTS_PER_S = Rule(0.001, 10_000, unit="requests/s")
CONCURRENCY = Rule(1, 1000, integer=True, unit="concurrent requests")
MAX_REQUESTS_PER_STEP = 1_000_000  # rate × step duration: the schedule is built in memory
# The worker's options (also `serve`).
LEASE_TTL_S = Rule(1, 86_400, unit="s")
PROBE_PROCESSES = Rule(0, 64, integer=True)
RETENTION_DAYS = Rule(0.01, 36_500, unit="days")
ALERT_EVERY_S = Rule(0.5, 3600, unit="s")
SOURCE_SYNC_S = Rule(0, 86_400, unit="s")  # how often the worker syncs the live sources (0: never)
HELD_ROWS = Rule(1, 10_000_000, integer=True, unit="rows")  # rows a worker holds while the store refuses them
# An endpoint's probe settings (planner.endpoints.registry: the CLI, the Endpoints page, TOML import and stored rows).
# The interval's floor is 10 s for real use (planner.endpoints.registry.min_interval_s); PROBE_INTERVAL_S.lo is the
# absolute floor a test may lower it to.
PROBE_INTERVAL_S = Rule(0.2, 7 * 86_400, unit="s")
PROBE_TIMEOUT_S = Rule(0, 3600, unit="s", lo_open=True)
PROBE_MAX_TOKENS = Rule(1, 131_072, integer=True, unit="tokens")
SCALE_DOWN_WINDOW_S = Rule(0, 7 * 86_400, unit="s")
COLD_IDLE_S = Rule(0, SCALE_DOWN_WINDOW_S.hi + 86_400, unit="s")  # an endpoint's scale-down window plus the margin
# A deployment and its model (gpu-fit, prefill, prefix, cost, whatif: their options, `--kv-from-gpu` and the
# candidate spec keys). Each end is past any real deployment — the largest serve one replica from 8 nodes of 8 GPUs,
# and fleets of a few hundred replicas; the largest published models have ~130 layers, 128 heads of 128 dimensions,
# a hidden size of 16,384 and 2 T parameters — and keeps the work they size bounded: the prefix replay builds one
# cache per replica (`prefix --replicas 9999999` held 3.3 GB and ran past 90 s), the KV arithmetic multiplies them.
REPLICAS = Rule(1, 1024, integer=True, unit="replicas")
MIN_REPLICAS = Rule(0, REPLICAS.hi, integer=True, unit="replicas")  # a pool's floor kept warm (0: scale to zero)
GPUS_PER_REPLICA = Rule(1, 64, integer=True, unit="GPUs")
MODEL_PARAMS_B = Rule(0, 100_000, unit="billion parameters", lo_open=True)
MODEL_LAYERS = Rule(1, 1000, integer=True, unit="layers")
MODEL_HEADS = Rule(1, 1024, integer=True, unit="heads")
MODEL_HEAD_DIM = Rule(1, 4096, integer=True)
MODEL_WIDTH = Rule(1, 131_072, integer=True)  # d_model, the hidden size
CONTEXT_TOKENS = Rule(1, 16_777_216, integer=True, unit="tokens")  # 16 Mi: past the longest context offered (10 M)
SEQUENCES = Rule(1, 100_000, integer=True, unit="sequences")  # in flight at once on one deployment
KV_BLOCK_TOKENS = Rule(1, 65_536, integer=True, unit="tokens")  # vLLM uses 16, Mooncake traces 512
KV_CACHE_BLOCKS = Rule(1, 100_000_000, integer=True, unit="blocks")  # 51 G tokens at 512 a block
BATCHED_TOKENS = Rule(1, 1_048_576, integer=True, unit="tokens")  # a batching engine's token budget per step
STEP_MS = Rule(0, 600_000, unit="ms")  # a batching engine's fixed cost per scheduler step
SWITCH = Rule(0, 1, integer=True)  # an on/off knob written 0 or 1 (chunked prefill, mixed steps)

# Alert rules (planner.alerts.rules.build_rule checks them; `alerts add` and the Alerts page take them).
ALERT_THRESHOLD = Rule(0, MAX_MAGNITUDE, lo_open=True)  # in the kind's unit: ms, % or s
ALERT_WINDOW_MIN = Rule(0.01, 10_080, unit="min")  # up to a week
ALERT_FOR_MIN = Rule(0, 10_080, unit="min")
ALERT_MIN_N = Rule(1, 1_000_000, integer=True, unit="samples")
ALERT_CLEAR_MARGIN_PCT = Rule(0, 90, unit="%")
# Capacity & cost and the worksheet (the Capacity page's tabs, the Worksheet page, `capacity …` and `budget`).
USD_PER_HOUR = Rule(0, 1_000_000, unit="USD/h")  # a GPU-hour, a replica-hour, an overhead per hour
TOKENS_PER_HOUR = Rule(0, MAX_MAGNITUDE, unit="tokens/h")
TOKENS_PER_MIN = Rule(0, MAX_MAGNITUDE, unit="tokens/min", lo_open=True)  # a replica's sustained capacity
TOKENS_PER_S = Rule(0, MAX_MAGNITUDE, unit="tokens/s", lo_open=True)  # a prefill rate
TOKEN_RATIO = Rule(0, 1_000_000)  # input : output tokens
GROWTH_FACTOR = Rule(0, 1_000, unit="×")
REPLAY_GROWTH = Rule(0, 100, unit="×", lo_open=True)  # a what-if's request volume, scaled (the What-if page, `whatif`)
ARRIVALS_PER_HOUR = Rule(0, MAX_MAGNITUDE, unit="requests/h")
SERVICE_S = Rule(0, 86_400, unit="s", lo_open=True)  # how long one request holds a slot
SLOTS = Rule(1, 100_000, integer=True, unit="slots")  # request slots per replica, or in a pool
DURATION_S = Rule(0, 86_400, unit="s")  # a cold start, an engine's start-up, a queue-wait target: up to a day
DURATION_MS = Rule(0, 86_400_000, unit="ms")  # a TTFT, a segment of one: up to a day
TARGET_MS = Rule(0, DURATION_MS.hi, unit="ms", lo_open=True)  # a p95 TTFT target (an interaction type's, `budget`'s)
CHECKPOINT_GB = Rule(0, 1_000_000, unit="GB")
PROMPT_TOKENS_P95 = Rule(0, CONTEXT_TOKENS.hi, unit="tokens")  # a p95 prompt: at most the longest context
SLOPE_MS_PER_1K_TOKENS = Rule(0, MAX_MAGNITUDE, unit="ms per 1K tokens", lo_open=True)
MFU = Rule(0, 1, lo_open=True)  # model FLOPs utilisation
USABLE_HBM_FRACTION = Rule(0, 1, lo_open=True)
# The comparison (Compare page, `report`).
EQUIVALENCE_MARGIN_MS = Rule(0, MAX_MAGNITUDE, unit="ms")
PERCENT = Rule(0, 100, unit="%")
# Regions and Prometheus (the Regions and Sources pages, `rtt`, `regions add`, `sources prometheus|hours`).
LATITUDE_DEG = Rule(-90, 90, unit="°")
LONGITUDE_DEG = Rule(-180, 180, unit="°")
RTT_INTERVAL_S = Rule(10, 7 * 86_400, unit="s")  # a custom target's scheduled probes
RTT_SAMPLES = Rule(1, 1000, integer=True, unit="samples")  # TCP connects kept per target
PROMETHEUS_HOURS = Rule(1, 24 * 90, integer=True, unit="hours")
