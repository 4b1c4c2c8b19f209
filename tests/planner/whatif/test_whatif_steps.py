"""The continuous-batching replay (planner.whatif.steps via replay()) on constructed batches with hand-computed times.

Every case uses one step cost: a step takes 10 ms fixed + 1 ms per prompt token + 10 ms per decode token
(prefill=1000 tokens/s; decode=50 tokens/s alone = 10 + 10 ms a step; step_ms=10).
"""

from __future__ import annotations

import numpy as np
import pytest

from planner.whatif.deployment import parse_deployment
from planner.whatif.replay import CannotKeepUp, replay
from planner.whatif.trace import Trace

BASE = "dedicated:replicas=1,prefill=1000,decode=50,step_ms=10,usd_per_gpu_h=1"


def dep(**knobs):
    extra = ",".join(f"{k}={v}" for k, v in {"engine": "vllm", "slots": 16, **knobs}.items())
    return parse_deployment(f"{BASE},{extra}")


def trace(arrival_ms, prompt, output) -> Trace:
    n = len(arrival_ms)
    return Trace(np.asarray(arrival_ms, float), np.asarray(prompt, float), np.zeros(n), np.asarray(output, float))


def test_a_lone_request_pays_one_step_for_its_prompt_and_one_step_per_further_token():
    r = replay(dep(rtt=40), trace([0], [50], [3]))
    assert r.ttft_ms.tolist() == [40 + 10 + 50]  # rtt + one step: fixed + 50 prompt tokens
    assert r.queue_ms.tolist() == [0] and r.prefill_ms.tolist() == [60]
    assert r.period_h * 3_600_000 == pytest.approx(60 + 2 * 20)  # two more tokens, one lone decode step each


def test_a_new_prompt_shares_its_step_with_every_running_decode():
    # Four 10-token prompts at 0 ms: one step of 40 prompt tokens (50 ms); then 4 decodes a step = 50 ms a step.
    # The fifth arrives at 500 ms, exactly a step boundary (50 + 9 × 50): its step carries 50 prompt tokens and the
    # 4 decodes: 10 + 50 + 40 = 100 ms.
    r = replay(dep(), trace([0, 0, 0, 0, 500], [10, 10, 10, 10, 50], [100, 100, 100, 100, 1]))
    assert r.ttft_ms.tolist() == [50, 50, 50, 50, 100]
    assert r.first_step_decodes.tolist() == [0, 0, 0, 0, 4]


def test_a_request_arriving_mid_step_waits_for_the_step_in_flight():
    # One decoding request: steps of 20 ms from 60 ms on; a request at 70 ms starts at the boundary at 80 ms.
    r = replay(dep(), trace([0, 70], [50, 30], [10, 1]))
    assert r.queue_ms.tolist() == [0, 10]
    assert r.prefill_ms.tolist()[1] == 10 + 30 + 10  # fixed + its 30 prompt tokens + the one decode beside it


def test_a_decode_heavy_batch_delays_a_new_prompt_by_the_steps_its_chunks_need():
    # Budget 8 tokens a step with 6 running decodes: a new 10-token prompt gets 2 tokens a step, so 5 steps of
    # 10 + 2 + 60 = 72 ms each before its first token.
    r = replay(
        dep(max_num_batched_tokens=8),
        trace([0] * 6 + [1000], [1] * 6 + [10], [10_000] * 6 + [1]),
    )
    # the six 1-token prompts share the first step (10 + 6 ms); from then on 6 decodes a step, 70 ms each
    boundary = 16 + 70 * int(np.ceil((1000 - 16) / 70))
    assert r.queue_ms[6] == pytest.approx(boundary - 1000)
    assert r.prefill_ms[6] == pytest.approx(5 * (10 + 2 + 60))


def test_chunked_prefill_splits_a_long_prompt_across_steps_and_without_it_the_prompt_runs_whole():
    t = trace([0], [250], [1])
    chunked = replay(dep(max_num_batched_tokens=100), t)
    assert chunked.ttft_ms.tolist() == [3 * 10 + 250]  # 100 + 100 + 50 tokens: three steps
    assert chunked.engine_steps == 3
    whole = replay(dep(max_num_batched_tokens=100, chunked_prefill=0), t)
    assert whole.ttft_ms.tolist() == [10 + 250]  # longer than the budget, alone in an empty step


def test_the_token_budget_is_respected_between_prompts():
    # Budget 100: three 60-token prompts at once. Chunked: step 1 carries the first 60 and 40 of the second, step 2
    # the second's last 20 and the third's 60. Unchunked: one prompt a step (60 + 60 > 100).
    t = trace([0, 0, 0], [60, 60, 60], [1, 1, 1])
    chunked = replay(dep(max_num_batched_tokens=100), t)
    assert chunked.ttft_ms.tolist() == [110, 110 + 90, 110 + 90]
    whole = replay(dep(max_num_batched_tokens=100, chunked_prefill=0), t)
    assert whole.ttft_ms.tolist() == [70, 140, 210]


def test_without_mixed_steps_a_prefill_step_pauses_the_running_decodes():
    # mixed=0 (SGLang's default): the new prompt's step carries no decode (10 + 30 ms), and the running request's
    # last token comes one step later than it would have.
    t = trace([0, 70], [50, 30], [10, 1])
    paused = replay(dep(mixed=0), t)
    mixed = replay(dep(mixed=1), t)
    assert paused.prefill_ms[1] == 10 + 30 and mixed.prefill_ms[1] == 10 + 30 + 10
    assert paused.period_h * 3_600_000 == pytest.approx(60 + 9 * 20 + 40)
    assert mixed.period_h * 3_600_000 == pytest.approx(60 + 9 * 20 + 30)


def test_a_request_waits_for_a_free_sequence_slot():
    # slots=2: two long requests run; the third waits until the first finishes (1 step + 4 decode steps of 2 × 10).
    t = trace([0, 0, 5], [10, 10, 10], [5, 9, 1])
    r = replay(dep(slots=2), t)
    first_done = 10 + 20 + 4 * (10 + 20)
    assert r.queue_ms[2] == pytest.approx(first_done - 5)


def test_the_kv_cache_admits_only_what_fits_and_refuses_a_request_larger_than_a_replica():
    # 16-token blocks, 4 blocks: a request of 40 prompt + 20 output tokens needs 4 blocks, so the second waits for
    # the first to finish.
    t = trace([0, 0], [40, 40], [20, 1])
    r = replay(dep(kv_blocks=4, block_size=16), t)
    assert r.queue_ms[1] == pytest.approx(10 + 40 + 19 * 20)
    with pytest.raises(CannotKeepUp, match="needs 5 KV blocks of 16 tokens; a replica has 4"):
        replay(dep(kv_blocks=4, block_size=16), trace([0], [60], [20]))


def test_requests_go_to_replicas_in_turn():
    spec = "dedicated:engine=vllm,replicas=2,prefill=1000,decode=50,step_ms=10,usd_per_gpu_h=1"
    r = replay(parse_deployment(spec), trace([0, 0, 0], [50, 50, 50], [1, 1, 1]))
    assert r.ttft_ms.tolist() == [110, 60, 110]  # the first and third share replica 0's first step, the second alone


def test_a_slower_speed_level_scales_every_step():
    r = replay(dep(), trace([0], [50], [3]), speed=2.0)
    assert r.ttft_ms.tolist() == [120]


def test_an_engine_that_can_never_keep_up_is_reported_before_the_replay():
    n = 1000
    t = trace(np.arange(n) * 10.0, [1000] * n, [1] * n)  # 1 s of prompt compute every 10 ms
    with pytest.raises(CannotKeepUp, match="can never keep up"):
        replay(dep(), t, max_wait_s=60)
