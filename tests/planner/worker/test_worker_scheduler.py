"""Schedule math with an injected clock: no test here sleeps."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from planner.worker.scheduler import (
    Scheduler,
    SteadyClock,
    jitter_ms,
    max_jitter_ms_for,
    phase_offset_ms,
    slot_at_or_after,
)

MIN = 60_000
T0 = 1_780_000_000_000  # some UTC epoch ms


def run_until(s: Scheduler, start_ms: int, end_ms: int, step_ms: int = 50, finish=True):
    """Drive the scheduler like the runner does, every step_ms; finished probes complete at once."""
    actions = []
    t = start_ms
    while t <= end_ms:
        for a in s.due(t):
            actions.append(a)
            if a.action == "run" and finish:
                s.done(a.key)
        t += step_ms
    return actions


def run_by_firing(s: Scheduler, start_ms: int, end_ms: int) -> list:
    """Drive the scheduler as the runner's loop does: wake at each next firing time up to end_ms; probes finish at
    once. (Waking every few ms instead gives the same decisions, 100× slower.)"""
    actions = []
    t = start_ms
    while (nxt := s.next_fire_ms()) is not None and nxt <= end_ms:
        t = max(t, nxt)
        for a in s.due(t):
            actions.append(a)
            if a.action == "run":
                s.done(a.key)
    return actions


def test_phase_offset_is_stable_and_spreads_endpoints_over_the_interval():
    assert phase_offset_ms("endpoint:7", MIN) == phase_offset_ms("endpoint:7", MIN)
    offsets = [phase_offset_ms(f"endpoint:{i}", MIN) for i in range(200)]
    # 200 endpoints at 60 s: no more than a handful share any one second of the minute.
    per_second = Counter(o // 1000 for o in offsets)
    assert max(per_second.values()) <= 8
    assert len(per_second) > 40


def test_jitter_is_small_one_sided_and_stable():
    assert max_jitter_ms_for(MIN) == 1000
    assert max_jitter_ms_for(2000) == 100
    js = [jitter_ms("endpoint:1", T0 + k * MIN, 1000) for k in range(100)]
    assert all(0 <= j < 1000 for j in js)
    assert len(set(js)) > 10
    assert js == [jitter_ms("endpoint:1", T0 + k * MIN, 1000) for k in range(100)]


@given(st.integers(0, 10**13), st.integers(1, 10**6), st.data())
def test_slot_at_or_after_is_on_the_grid_and_not_before(t, interval, data):
    offset = data.draw(st.integers(0, interval - 1))
    s = slot_at_or_after(t, interval, offset)
    assert s >= t and s - t < interval and (s - offset) % interval == 0


def test_one_run_per_slot_with_scheduled_at_on_the_grid():
    s = Scheduler()
    job = s.add("endpoint:1", MIN, T0)
    acts = run_until(s, T0, T0 + 10 * MIN)
    runs = [a for a in acts if a.action == "run"]
    assert len(runs) == 10
    assert all((a.slot_ms - job.offset_ms) % MIN == 0 for a in runs)
    assert len({a.slot_ms for a in runs}) == 10
    assert all(0 <= a.lateness_ms < 50 for a in runs)  # woken every 50 ms: never later than that


def test_a_slot_whose_previous_probe_is_still_running_is_skipped_not_queued():
    s = Scheduler()
    s.add("endpoint:1", MIN, T0)
    acts = run_until(s, T0, T0 + 3 * MIN + 5000, finish=False)  # the first probe never finishes
    assert [a.action for a in acts] == ["run", "skip", "skip"]
    assert acts[1].reason == "previous probe still running"
    s.done("endpoint:1")
    nxt = run_until(s, T0 + 3 * MIN + 5050, T0 + 4 * MIN + 5000)
    assert [a.action for a in nxt] == ["run"]


def test_suspension_records_every_missed_slot_once_and_never_backfills():
    s = Scheduler()
    job = s.add("endpoint:1", MIN, T0)
    first = run_until(s, T0, T0 + MIN)
    assert [a.action for a in first] == ["run"]
    # The laptop sleeps for ten minutes: the next wake-up is 10 min later.
    wake = T0 + 11 * MIN
    acts = s.due(wake)
    runs = [a for a in acts if a.action == "run"]
    skips = [a for a in acts if a.action == "skip"]
    assert len(runs) <= 1  # at most the current slot runs: no burst of back-filled probes
    assert len(skips) + len(runs) == len({a.slot_ms for a in acts})  # each slot decided once
    assert len(skips) >= 9
    slots = sorted(a.slot_ms for a in acts)
    assert all(b - a == MIN for a, b in zip(slots, slots[1:], strict=False))
    assert job.next_slot_ms > wake - MIN


def test_late_wakeup_beyond_half_an_interval_is_a_skip_with_the_lateness():
    s = Scheduler()
    job = s.add("endpoint:1", MIN, T0)
    fire = job.fire_at_ms()
    acts = s.due(fire + MIN // 2 + 1)
    assert [a.action for a in acts] == ["skip"]
    assert "late by" in acts[0].reason


def test_restart_reports_slots_lost_while_down_as_skipped():
    s = Scheduler()
    offset = phase_offset_ms("endpoint:1", MIN)
    last = slot_at_or_after(T0, MIN, offset)
    s.add("endpoint:1", MIN, last + 5 * MIN + 10, last_slot_ms=last)
    acts = s.due(last + 5 * MIN + 10 + 1000)
    skipped = [a.slot_ms for a in acts if a.action == "skip"]
    assert skipped[:4] == [last + k * MIN for k in range(1, 5)]
    assert all("not running" in a.reason for a in acts if a.action == "skip")
    assert all(
        a.lateness_ms < 1000 for a in acts if a.action == "run"
    )  # the first run is the next slot, not a late one
    assert last not in {a.slot_ms for a in acts}  # the stored slot is not redone


def test_a_reload_before_the_first_tick_keeps_the_slots_lost_while_down():
    """The runner re-reads endpoints right after taking the lease; that must not drop the restart's skipped slots."""
    s = Scheduler()
    offset = phase_offset_ms("endpoint:1", MIN)
    last = slot_at_or_after(T0, MIN, offset)
    now = last + 5 * MIN + 10
    s.add("endpoint:1", MIN, now, last_slot_ms=last)
    s.add("endpoint:1", MIN, now + 5)  # the periodic reload, before due() ran
    skipped = [a.slot_ms for a in s.due(now + 1000) if a.action == "skip"]
    assert skipped[:4] == [last + k * MIN for k in range(1, 5)]


def test_very_long_gap_is_capped_and_says_how_many_were_not_recorded():
    s = Scheduler(max_skips_per_gap=10)
    offset = phase_offset_ms("endpoint:1", MIN)
    last = slot_at_or_after(T0, MIN, offset)
    s.add("endpoint:1", MIN, last + 1000 * MIN, last_slot_ms=last)
    acts = s.due(last + 1000 * MIN + 1100)
    skips = [a for a in acts if a.action == "skip"]
    assert len(skips) == 10 and "earlier slots not recorded" in skips[0].reason


def test_paused_job_skips_with_reason_and_resumes():
    s = Scheduler()
    s.add("endpoint:1", MIN, T0)
    s.pause("endpoint:1")
    acts = run_until(s, T0, T0 + 2 * MIN)
    assert acts and all(a.action == "skip" and "cold reading" in a.reason for a in acts)
    s.resume("endpoint:1")
    assert any(a.action == "run" for a in run_until(s, T0 + 2 * MIN + 50, T0 + 3 * MIN + 50))


def test_two_hundred_endpoints_fire_spread_out_not_together():
    s = Scheduler()
    for i in range(200):
        s.add(f"endpoint:{i}", MIN, T0)
    acts = run_by_firing(s, T0, T0 + MIN)
    assert sum(a.action == "run" for a in acts) == 200 and all(a.lateness_ms == 0 for a in acts)
    per_second = Counter((a.slot_ms - T0) // 1000 for a in acts)
    assert max(per_second.values()) <= 10


def test_steady_clock_ignores_small_wall_steps_and_reanchors_after_suspend():
    mono, wall = [100.0], [T0 / 1000]
    c = SteadyClock(mono=lambda: mono[0], wall=lambda: wall[0])
    mono[0] += 1.0
    wall[0] += 1.5  # NTP nudged the wall clock by 0.5 s: steady time follows the monotonic clock
    assert c.now_ms() == T0 + 1000
    wall[0] += 3600  # suspended for an hour: the monotonic clock did not move
    assert c.now_ms() == T0 + 1500 + 3_600_000
    assert c.jumps == 1
    mono[0] += 0.25
    wall[0] += 0.25
    assert c.now_ms() == T0 + 1500 + 3_600_000 + 250


def test_steady_clock_reads_whole_ms_of_its_sources_exactly():
    """A test clock set to a slot's ms must read that ms: 1.001 s × 1000 is 1000.999…, which must not read 1000."""
    mono, wall = [0.0], [T0 / 1000]
    c = SteadyClock(mono=lambda: mono[0], wall=lambda: wall[0])
    mono[0], wall[0] = 1.001, (T0 + 1001) / 1000
    assert c.now_ms() == T0 + 1001 and c.mono_s() == 1.001 and c.jumps == 0
