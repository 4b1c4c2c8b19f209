"""Schedule math for the worker: slots, phase offsets, jitter, and run/skip decisions.

Pure code with an injected clock, so every decision is testable without sleeping.

Each job (an endpoint, or an RTT target) fires on a grid of *slots*:
``slot = k · interval + offset`` in UTC epoch ms, where the offset is a stable
hash of the job's key (Prometheus' per-target offset), so endpoints with the
same interval do not fire together and a restarted worker lands on the same
slots. A small one-sided jitter (≤ 5 % of the interval, ≤ 1 s; also a stable
hash) is added to the firing time, never to the slot's identity: the stored
``scheduled_at_ms`` is the slot, which is what makes re-inserting a slot after
a crash a no-op.

Decisions (`Scheduler.due`): when a job's slot is due it runs, unless

- the previous probe of that job is still in flight,
- the job is paused (a cold reading is idling it), or
- the loop woke up more than the grace (half an interval) after the firing time
  (process suspended, laptop asleep);

then the slot is *skipped* — reported to the caller with its SkipCause (planner.endpoints.samples) so it can be stored
as a ``kind='skipped'`` row — and never backfilled. Slots passed over entirely
(a long suspension, a worker that was not running) are reported as skipped too,
at most `max_skips_per_gap` of them per gap, the oldest carrying the count.

Time: the scheduler sees wall-clock ms derived from the monotonic clock
(`SteadyClock`), so NTP slews and steps do not make it fire early or twice; a
jump between the two clocks of more than 2 s (suspend/resume, a clock step)
re-anchors it, which shows up as skipped slots, not as a burst of probes.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from planner.endpoints.samples import SkipCause

__all__ = [
    "Action",
    "Job",
    "Scheduler",
    "SteadyClock",
    "jitter_ms",
    "max_jitter_ms_for",
    "phase_offset_ms",
    "slot_at_or_after",
]

REANCHOR_THRESHOLD_MS = 2000


def _hash64(*parts: object) -> int:
    digest = hashlib.blake2b("\x1f".join(str(p) for p in parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def phase_offset_ms(key: str, interval_ms: int) -> int:
    """Stable offset in [0, interval_ms) for `key`: the same key always fires at the same phase."""
    if interval_ms <= 0:
        raise ValueError(f"interval must be > 0 ms, got {interval_ms}")
    return _hash64("phase", key) % interval_ms


def max_jitter_ms_for(interval_ms: int) -> int:
    """Jitter ceiling: 5 % of the interval, at most 1000 ms."""
    return min(interval_ms // 20, 1000)


def jitter_ms(key: str, slot_ms: int, max_jitter_ms: int) -> int:
    """Stable one-sided jitter in [0, max_jitter_ms) for one slot of one job (0 when max is 0)."""
    if max_jitter_ms <= 0:
        return 0
    return _hash64("jitter", key, slot_ms) % max_jitter_ms


def slot_at_or_after(t_ms: int, interval_ms: int, offset_ms: int) -> int:
    """The first slot ``k·interval + offset`` at or after t_ms."""
    k = -((offset_ms - t_ms) // interval_ms)  # ceil((t - offset) / interval)
    return k * interval_ms + offset_ms


class SteadyClock:
    """Wall-clock epoch ms that advance with the monotonic clock.

    `now_ms()` = anchor wall + monotonic elapsed, so it never runs backwards and
    ignores NTP slews; when it drifts more than 2 s from the real wall clock
    (the machine slept: Linux' monotonic clock stops during suspend; or the
    clock was stepped) it re-anchors to the wall clock and counts the jump.
    `mono` returns seconds, `wall` returns epoch seconds (both injectable: a test's clock moves only when the test
    moves it, so the worker's every decision is reproducible). Readings are rounded to the nearest ms, so a test
    clock set to a slot's exact ms reads that ms (float seconds × 1000 can fall a hair short of it).
    """

    def __init__(self, mono: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time) -> None:
        self._mono, self._wall = mono, wall
        self.jumps = 0
        self._anchor()

    def _anchor(self) -> None:
        self._mono0 = self._mono()
        self._wall0_ms = round(self._wall() * 1000)

    def mono_s(self) -> float:
        """Seconds on the injected monotonic clock: what the worker's periods (lease renewal, reload, the state
        file, the stop's deadline) are counted in."""
        return self._mono()

    def now_ms(self) -> int:
        """Current epoch ms on the steady timeline (re-anchored after a jump)."""
        steady = self._wall0_ms + round((self._mono() - self._mono0) * 1000)
        real = round(self._wall() * 1000)
        if abs(real - steady) > REANCHOR_THRESHOLD_MS:
            self.jumps += 1
            self._anchor()
            return real
        return steady


@dataclass
class Job:
    """One scheduled series: `key` names it (e.g. 'endpoint:3'), slots every interval_ms."""

    key: str
    interval_ms: int
    offset_ms: int
    max_jitter_ms: int
    next_slot_ms: int
    in_flight: bool = False
    paused: bool = False
    payload: object = None
    missed: tuple[int, int] | None = None  # (first slot, count) lost while no worker ran; reported by due()
    crashed_until_ms: int | None = None  # missed slots up to here were lost when the previous worker crashed

    def fire_at_ms(self) -> int:
        """When the next slot should fire (slot + its jitter)."""
        return self.next_slot_ms + jitter_ms(self.key, self.next_slot_ms, self.max_jitter_ms)


@dataclass(frozen=True)
class Action:
    """What to do with one slot: action is 'run' or 'skip'; lateness_ms is wake time − firing time."""

    key: str
    slot_ms: int
    action: str
    reason: str = ""  # for the reader (stored as a skipped row's error_detail): the cause's text, with particulars
    lateness_ms: int = 0
    cause: SkipCause | None = None  # a skip's reason as data (stored as skip_cause; the stop line counts by it)


@dataclass
class Scheduler:
    """The set of jobs and the run/skip decisions; no I/O, no sleeping."""

    max_skips_per_gap: int = 1440
    jobs: dict[str, Job] = field(default_factory=dict)

    def add(
        self,
        key: str,
        interval_ms: int,
        now_ms: int,
        *,
        last_slot_ms: int | None = None,
        payload: object = None,
        jitter: bool = True,
        crashed_until_ms: int | None = None,
    ) -> Job:
        """Add (or re-time) a job. With `last_slot_ms` (the newest slot already stored), the slots
        since then are reported as skipped by the next `due()`; without it the job starts at the
        first slot from now. `crashed_until_ms`: the previous worker died without stopping (kill -9)
        and was last known alive then; slots up to it are labelled lost in a crash, not "not running".
        Raises ValueError for interval_ms ≤ 0."""
        offset = phase_offset_ms(key, interval_ms)
        old = self.jobs.get(key)
        job = Job(
            key=key,
            interval_ms=interval_ms,
            offset_ms=offset,
            max_jitter_ms=max_jitter_ms_for(interval_ms) if jitter else 0,
            next_slot_ms=slot_at_or_after(now_ms, interval_ms, offset),
            payload=payload,
        )
        if last_slot_ms is not None and last_slot_ms < now_ms:
            # Slots between the newest stored one and now passed while no worker ran: skipped, not late.
            first = slot_at_or_after(last_slot_ms + 1, interval_ms, offset)
            job.missed = (first, max(0, (job.next_slot_ms - first) // interval_ms))
            job.crashed_until_ms = crashed_until_ms
        if old is not None:
            job.in_flight, job.paused = old.in_flight, old.paused
            if job.missed is None:  # a re-time before due() ran must not lose the slots still to report
                job.missed, job.crashed_until_ms = old.missed, old.crashed_until_ms
            if old.interval_ms == interval_ms:
                job.next_slot_ms = old.next_slot_ms
        self.jobs[key] = job
        return job

    def remove(self, key: str) -> None:
        """Forget a job (endpoint disabled or deleted); an in-flight probe may still finish."""
        self.jobs.pop(key, None)

    def next_fire_ms(self) -> int | None:
        """The earliest firing time over all jobs (None when there are none)."""
        return min((j.fire_at_ms() for j in self.jobs.values()), default=None)

    def due(self, now_ms: int) -> list[Action]:
        """Every decision due at now_ms, oldest slot first; marks run jobs in flight."""
        out: list[Action] = []
        for job in self.jobs.values():
            if job.missed is not None:
                first, count = job.missed
                job.missed = None
                iv = job.interval_ms
                crashed = 0
                if job.crashed_until_ms is not None and job.crashed_until_ms >= first:
                    crashed = min(count, (job.crashed_until_ms - first) // iv + 1)
                    out.extend(self._skips(job.key, first, crashed, iv, SkipCause.CRASHED))
                out.extend(self._skips(job.key, first + crashed * iv, count - crashed, iv, SkipCause.NOT_RUNNING))
            if job.fire_at_ms() > now_ms:
                continue
            iv = job.interval_ms
            # The newest slot whose firing time has passed is the candidate; older ones were passed over.
            latest = job.next_slot_ms + ((now_ms - job.next_slot_ms) // iv) * iv
            if latest + jitter_ms(job.key, latest, job.max_jitter_ms) > now_ms:
                latest -= iv
            passed_over = (latest - job.next_slot_ms) // iv
            if passed_over > 0:
                out.extend(self._skips(job.key, job.next_slot_ms, passed_over, iv, SkipCause.PASSED_OVER))
            fire = latest + jitter_ms(job.key, latest, job.max_jitter_ms)
            lateness = now_ms - fire
            if job.paused or job.in_flight:
                cause = SkipCause.PAUSED if job.paused else SkipCause.IN_FLIGHT
                out.append(Action(job.key, latest, "skip", cause.text, lateness, cause=cause))
            elif lateness > iv // 2:
                reason = f"{SkipCause.LATE.text} {lateness} ms (process suspended?)"
                out.append(Action(job.key, latest, "skip", reason, lateness, cause=SkipCause.LATE))
            else:
                job.in_flight = True
                out.append(Action(job.key, latest, "run", "", lateness))
            job.next_slot_ms = latest + iv
        out.sort(key=lambda a: a.slot_ms)
        return out

    def _skips(self, key: str, first: int, count: int, iv: int, cause: SkipCause) -> list[Action]:
        """Skip actions for `count` slots from `first`; only the newest max_skips_per_gap are listed."""
        shown = min(count, self.max_skips_per_gap)
        start = first + (count - shown) * iv
        out = []
        for i in range(shown):
            text = cause.text + (f" ({count - shown} earlier slots not recorded)" if i == 0 and count > shown else "")
            out.append(Action(key, start + i * iv, "skip", text, cause=cause))
        return out

    def done(self, key: str) -> None:
        """The probe of `key` finished (stored or failed): its next slot may run."""
        if key in self.jobs:
            self.jobs[key].in_flight = False

    def pause(self, key: str) -> None:
        """Stop running `key`'s slots (they are skipped with a reason) until resume()."""
        if key in self.jobs:
            self.jobs[key].paused = True

    def resume(self, key: str) -> None:
        """Run `key`'s slots again from its next slot on."""
        if key in self.jobs:
            self.jobs[key].paused = False
