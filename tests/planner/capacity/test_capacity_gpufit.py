"""GPU fit: KV bytes per token, weights + KV vs GPU memory (GiB), and a model that fits on no node."""

import dataclasses

import pytest

from planner.capacity.errors import CapacityError
from planner.capacity.gpufit import fit, fit_table, kv_bytes_per_token
from planner.capacity.specs import gpus, models

M = {m.key: m for m in models()}
G = {g.key: g for g in gpus()}


def test_kv_bytes_per_token_llama3():
    assert kv_bytes_per_token(M["llama-3.1-8b"]) == 128 * 1024
    assert kv_bytes_per_token(M["llama-3.1-70b"]) == 320 * 1024
    assert kv_bytes_per_token(M["llama-3.1-70b"], "fp8") == 160 * 1024


def test_70b_fp8_with_8_long_sequences_by_hand():
    f = fit(
        M["llama-3.1-70b"],
        G["H100"],
        weight_dtype="fp8",
        context_tokens=32_768,
        concurrent_sequences=8,
        usable_fraction=0.9,
    )
    # memory in GiB (2³⁰ bytes), as the card's 80 GiB and vLLM count it
    weights_gib = 70.6e9 / 2**30  # 65.75 GiB
    assert 327_680 * 32_768 * 8 == 80 * 2**30  # the KV: 80 GiB exactly
    assert f.weights_gib == pytest.approx(weights_gib)
    assert f.kv_gib == pytest.approx(80.0)
    assert f.min_gpus == 3  # 145.75 GiB / 72 GiB usable per H100
    assert f.tp_gpus == 4  # tensor parallel over a power of two
    assert f.headroom_gib == pytest.approx(4 * 72 - (weights_gib + 80))
    assert "= 145.8 GiB fits on 4× H100" in f.message
    assert f.fits and "fits on 4× H100" in f.message


def test_8b_fits_one_h100_and_reports_room_for_more_sequences():
    f = fit(M["llama-3.1-8b"], G["H100"], context_tokens=8192, concurrent_sequences=1)
    assert f.tp_gpus == 1
    per_seq_gib = 131_072 * 8192 / 2**30  # 1 GiB a sequence
    assert f.max_sequences == int((72 - 16.06e9 / 2**30) // per_seq_gib) == 57


def test_a_model_that_fits_on_no_node_is_a_clear_result():
    huge = dataclasses.replace(M["llama-3.1-405b"], params_b=1000)
    f = fit(huge, G["L4"], weight_dtype="bf16")
    assert not f.fits and f.tp_gpus is None and f.headroom_gib is None
    assert "does not fit on one 8×L4" in f.message
    assert f"at least {f.min_gpus} GPUs" in f.message
    table = fit_table(huge, list(gpus()), weight_dtype="bf16")
    assert not table["fits"].any()


def test_bad_fit_inputs():
    with pytest.raises(CapacityError, match="at least 1"):
        fit(M["llama-3.1-8b"], G["H100"], context_tokens=0)
    with pytest.raises(CapacityError, match="usable memory"):
        fit(M["llama-3.1-8b"], G["H100"], usable_fraction=1.5)
    broken = dataclasses.replace(M["llama-3.1-8b"], kv_heads=0)
    with pytest.raises(CapacityError, match="kv_heads"):
        fit(broken, G["H100"])
