"""What a calibration measured (planner.whatif.calibrate) and the what-if spec it gives (`Calibration.spec`)."""

from __future__ import annotations

from dataclasses import dataclass

from planner.probes.fit import PrefillFit
from planner.spread import speed_sd_of
from planner.whatif.calibrate_steps import StepFit
from planner.whatif.engines import profile

__all__ = ["DISAGREE_FRACTION", "Calibration"]

DISAGREE_FRACTION = 0.25  # rounds whose fastest prefill rate is this much above the slowest are reported


@dataclass(frozen=True)
class Calibration:
    """What a calibration run measured; `spec()` turns it into a what-if deployment."""

    prefill: PrefillFit
    token_basis: str  # "server-counted" or "requested"
    decode_tokens_per_s: float
    throughput_by_concurrency: dict[int, float]  # achieved requests/s
    latency_ms_by_concurrency: dict[int, float]  # median total time of one request
    wall_s: float
    prompt_overhead_tokens: float = 0.0  # median server-counted − requested prompt tokens (0 when not counted)
    fixed_hold_ms: float = 0.0  # slot time per request beyond its prefill at saturation (0: not measured)
    round_prefill_tokens_per_s: tuple[float, ...] = ()  # each round's own prefill rate, in the order measured
    request_sd: float = 0.0  # robust sd of log(TTFT ÷ its round's line) over every request
    round_at_s: tuple[float, ...] = ()  # when each round started, s after the calibration's start
    hold_ms_by_tokens: dict[int, float] | None = None  # saturation: slot time per request by prompt length (ms)
    engine: str = "slots"  # the serving engine the spec is for (planner.whatif.engines)
    slots: int | None = None  # a batching engine's running sequences (None: the profile's)
    step: StepFit | None = None  # a batching engine's step costs

    @property
    def speed_sd(self) -> float:
        """The speed spread a next run may see from this calibration's rounds alone (planner.spread.speed_sd_of;
        0 with one round). The CLI pools it with the record (planner.whatif.drift)."""
        return speed_sd_of(self.round_prefill_tokens_per_s)

    @property
    def rounds_disagree(self) -> float | None:
        """How much faster the fastest round was than the slowest (0.3 = 30 %), when more than DISAGREE_FRACTION;
        else None."""
        rates = self.round_prefill_tokens_per_s
        if len(rates) < 2:
            return None
        spread = max(rates) / min(rates) - 1
        return spread if spread > DISAGREE_FRACTION else None

    @property
    def serving_model(self) -> str:
        """The serving model the spec assumes, in words."""
        if self.engine != "slots":
            label = profile(self.engine).label
            return (
                f"{label}, continuous batching: each step carries the running decodes and new prompts' chunks, "
                f"{self.spec_slots} sequences at most; "
                + (self.step.describe() if self.step else "step costs from the profile")
            )
        slots = self.effective_slots
        if slots == 1 and max(self.throughput_by_concurrency) > 1 and self.slowdown_at_max > 1.5:
            return (
                "one slot, first in first out: requests in flight share one compute budget (at concurrency "
                f"{max(self.latency_ms_by_concurrency)} each took {self.slowdown_at_max:.1f}× as long and throughput "
                "did not rise), so they are modelled as served one after another at the full rate"
            )
        tput = self.throughput_by_concurrency
        gain = max(tput.values()) / tput[min(tput)] if tput[min(tput)] > 0 else 1.0
        return (
            f"{slots} independent slot(s), first in first out across them, each at the full rate "
            f"(throughput rose {gain:.1f}× with concurrency)"
        )

    @property
    def effective_slots(self) -> int:
        base = self.throughput_by_concurrency[min(self.throughput_by_concurrency)]
        return max(1, round(max(self.throughput_by_concurrency.values()) / base)) if base > 0 else 1

    @property
    def spec_slots(self) -> int:
        """The spec's slots: a batching engine's running sequences (given, else its profile's), else the effective
        slots."""
        if self.engine == "slots":
            return self.effective_slots
        return self.slots if self.slots is not None else profile(self.engine).slots

    @property
    def slowdown_at_max(self) -> float:
        """Median request time at the highest concurrency ÷ alone: 1.0 = independent slots."""
        lat = self.latency_ms_by_concurrency
        return lat[max(lat)] / lat[min(lat)]

    def spec(self, name: str = "calibrated", speed_sd: float | None = None) -> str:
        """The `dedicated:` spec; `speed_sd`: the spread to carry (the CLI's pooled one), else this calibration's.

        A negative intercept (fewer tokens prefilled than counted: the server reuses the chat template's first
        tokens from its cache) comes off the overhead tokens instead of being lost at rtt=0. Raises ValueError when
        the prefill fit has no positive slope."""
        rate = self.prefill.prefill_tokens_per_s
        if rate is None:
            raise ValueError("the prefill fit has no positive slope: probe longer prompts")
        sd = self.speed_sd if speed_sd is None else speed_sd
        spread = f"speed_sd={min(sd, 2.0):.3f},request_sd={min(self.request_sd, 2.0):.3f}"
        icpt, fixed = self.prefill.intercept_ms, self.fixed_hold_ms
        if self.engine != "slots":
            step_ms = (
                self.step.step_ms if self.step else profile(self.engine).fixed_share * 1000 / self.decode_tokens_per_s
            )
            decode = self.decode_tokens_per_s
            if self.step is not None:
                decode = 1000.0 / max(self.step.step_ms + self.step.decode_token_ms, 1e-6)
            step_ms = min(step_ms, 1000.0 / decode)
            # A lone prompt takes one step, or two where the engine runs its tail in a step of its own: the
            # intercept less those steps' fixed cost is the rtt.
            steps_ms = step_ms * (2 if profile(self.engine).prompt_tail else 1)
            overhead = max(0.0, self.prompt_overhead_tokens + min(0.0, icpt - steps_ms) * rate / 1000.0)
            return (
                f"dedicated:name={name},engine={self.engine},replicas=1,slots={self.spec_slots},prefill={rate:.0f},"
                f"decode={decode:.2f},step_ms={step_ms:.2f},usd_per_gpu_h=0,gpus=1,rtt={max(0.0, icpt - steps_ms):.0f},"
                f"overhead_tokens={overhead:.0f},{spread}"
            )
        # The fixed server time holds the slot: it moves from rtt into overhead tokens at the prefill rate.
        overhead = max(0.0, self.prompt_overhead_tokens + (min(0.0, icpt) + fixed) * rate / 1000.0)
        return (
            f"dedicated:name={name},replicas=1,slots={self.effective_slots},prefill={rate:.0f},"
            f"decode={self.decode_tokens_per_s:.1f},usd_per_gpu_h=0,gpus=1,rtt={max(0.0, icpt - fixed):.0f},"
            f"overhead_tokens={overhead:.0f},{spread}"
        )
