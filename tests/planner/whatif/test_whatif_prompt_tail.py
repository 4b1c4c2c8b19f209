"""llama.cpp runs a prompt's last 4 tokens in a step after the rest of it (a KV checkpoint is taken between, for a model
with sliding-window attention such as Gemma 3): a prompt arriving while another's body runs shares the next step
with the other's tail, so the first prompt's first token waits for the second's whole prompt (issue 45, item 4)."""

from __future__ import annotations

import numpy as np
import pytest

from planner.whatif.deployment import SpecError, parse_deployment
from planner.whatif.replay import replay
from planner.whatif.trace import Trace

# 10 ms a step, 2.5 ms a prompt token (400 tokens/s), a lone decode step 20 ms (10 ms a decode token)
LLAMA = "dedicated:engine=llama.cpp,replicas=1,slots=4,prefill=400,decode=50,step_ms=10,usd_per_gpu_h=1"


def _two_prompts() -> Trace:
    """A at 0 and B at 200 ms, 324 prompt tokens and 2 output tokens each."""
    return Trace(np.array([0.0, 200.0]), np.array([324.0, 324.0]), np.zeros(2), np.array([2.0, 2.0]))


def test_a_prompt_arriving_during_anothers_body_delays_the_others_first_token_as_llama_cpp_does():
    rep = replay(parse_deployment(LLAMA), _two_prompts())  # the llama.cpp profile's prompt_tail = 4
    # step 1 (0 → 810 ms): A's first 320 tokens. Step 2 (810 → 1,630): A's last 4 and B's first 320 (B arrived at
    # 200): A's first token at 1,630 — the server's log showed 1,624 ms for A against 845 alone. Step 3 (→ 1,660):
    # B's last 4 with A's one decode token.
    assert rep.ttft_ms.tolist() == pytest.approx([1_630.0, 1_460.0])
    assert rep.queue_ms.tolist() == pytest.approx([0.0, 610.0])
    assert rep.prefill_ms.tolist() == pytest.approx([1_630.0, 850.0])


def test_without_a_tail_each_prompt_ends_in_its_own_step():
    rep = replay(parse_deployment(LLAMA + ",prompt_tail=0"), _two_prompts())
    # A alone in one step of 324 tokens (820 ms); B in the next, with A's decode token (830 ms)
    assert rep.ttft_ms.tolist() == pytest.approx([820.0, 1_450.0])
    vllm = replay(parse_deployment(LLAMA.replace("llama.cpp", "vllm")), _two_prompts())
    assert vllm.ttft_ms.tolist() == pytest.approx(rep.ttft_ms.tolist())  # vLLM's profile has no tail


def test_a_prompt_no_longer_than_the_tail_runs_in_one_step_and_the_knob_is_checked():
    short = Trace(np.array([0.0]), np.array([4.0]), np.zeros(1), np.array([1.0]))
    assert replay(parse_deployment(LLAMA), short).ttft_ms.tolist() == pytest.approx([10.0 + 4 * 2.5])
    with pytest.raises(SpecError, match="prompt_tail applies to a batching engine"):
        parse_deployment("dedicated:replicas=1,slots=4,prefill=400,decode=50,usd_per_gpu_h=1,prompt_tail=4")
