"""Weight-load projection: checkpoint bytes, the published rows' rates, cold readings, the 8B–1T table."""

import pytest

from planner.capacity.errors import CapacityError
from planner.capacity.specs import loader_rows
from planner.capacity.weights import (
    PROJECTION_PARAMS_B,
    checkpoint_gb,
    load_time_s,
    projection_table,
    rate_from_cold_reading,
    rate_from_row,
)

ROWS = {r.key: r for r in loader_rows()}


def test_checkpoint_bytes_per_format():
    assert checkpoint_gb(30, "fp8") == 30
    assert checkpoint_gb(70, "fp8") == 70
    assert checkpoint_gb(70, "bf16") == 140
    assert checkpoint_gb(70, "INT4") == 35


def test_seed_projection_70gb_best_and_default_loader():
    best, default = rate_from_row(ROWS["s3-streamer-c32"]), rate_from_row(ROWS["gp3-safetensors"])
    assert best.gb_per_s == pytest.approx(15 / 4.88)
    assert load_time_s(70, best) == pytest.approx(70 / 15 * 4.88)
    assert round(load_time_s(70, best)) == 23
    assert round(load_time_s(70, default)) == 224


def test_published_engine_overhead_is_16_to_21_s_except_tensorizer_on_s3():
    overheads = {k: r.engine_startup_s for k, r in ROWS.items()}
    assert overheads["s3-tensorizer-16"] == pytest.approx(27.82)
    assert all(15.5 <= v <= 21 for k, v in overheads.items() if k != "s3-tensorizer-16")


def test_engine_startup_adds_on_top():
    r = rate_from_row(ROWS["s3-streamer-c32"])
    assert load_time_s(15, r, engine_startup_s=18.3) == pytest.approx(4.88 + 18.3)


def test_rate_from_a_cold_reading():
    # 16 GB checkpoint, cold 36.4 s, warm 0.4 s, 20 s engine start-up → 16 GB in 16 s = 1 GB/s
    r = rate_from_cold_reading(16, 36_400, 400, 20)
    assert r.gb_per_s == pytest.approx(1.0)
    assert r.source == "cold reading"
    with pytest.raises(CapacityError, match="leaves no time"):
        rate_from_cold_reading(16, 10_000, 400, 20)


def test_projection_table_covers_8b_to_1t_with_one_column_per_rate():
    rates = [rate_from_row(ROWS["s3-streamer-c32"]), rate_from_row(ROWS["gp3-safetensors"])]
    t = projection_table(rates, "fp8")
    assert list(t["params_b"]) == list(PROJECTION_PARAMS_B)
    assert t["params_b"].min() == 8 and t["params_b"].max() == 1000
    row70 = t[t["params_b"] == 70].iloc[0]
    assert round(row70.iloc[2]) == 23 and round(row70.iloc[3]) == 224
    assert "GB/s" in t.columns[2]


def test_bad_weight_inputs_are_named():
    with pytest.raises(CapacityError, match="weight dtype"):
        checkpoint_gb(70, "fp12")
    with pytest.raises(CapacityError, match="parameters"):
        checkpoint_gb(0, "fp8")
    with pytest.raises(CapacityError, match="load rate"):
        load_time_s(70, 0.0)
    with pytest.raises(CapacityError, match="at least one load rate"):
        projection_table([], "fp8")
