"""Capacity specs are data: every row has a source and an as-of date, and the figures are sane."""

import pytest

from planner.asset_files import load_asset
from planner.capacity import specs as P
from planner.capacity.errors import CapacityError


@pytest.mark.parametrize(
    "asset,table",
    [
        ("gpus.toml", "gpu"),
        ("models.toml", "model"),
        ("prices.toml", "serverless"),
        ("prices.toml", "gpu_hour"),
        ("loaders.toml", "row"),
    ],
)
def test_every_preset_row_has_source_and_as_of(asset, table):
    rows = load_asset(asset)[table]
    assert rows
    for row in rows:
        assert str(row.get("source", "")).strip(), f"{asset} {row.get('key')}: no source"
        assert str(row.get("as_of", "")).strip(), f"{asset} {row.get('key')}: no as_of"


def test_mix_and_defaults_have_sources():
    for section in (
        load_asset("prices.toml")["mix"],
        load_asset("loaders.toml")["defaults"],
        load_asset("gpus.toml")["defaults"],
    ):
        assert section.get("as_of") and any(k.endswith("source") for k in section)


def test_the_seven_gpus_with_dense_figures():
    g = {x.key: x for x in P.gpus()}
    assert set(g) == {"H100", "H200", "B200", "A100-80GB", "L40S", "A10G", "L4"}
    assert g["H100"].bf16_dense_tflops == 989 and g["H100"].fp8_dense_tflops == 1979  # dense, not the 3,958 sparse
    assert g["H200"].memory_gib == 141 and g["A100-80GB"].fp8_dense_tflops is None


def test_loader_rows_are_the_published_table():
    rows = {r.key: r for r in P.loader_rows()}
    assert rows["s3-streamer-c32"].load_s == 4.88 and rows["gp3-safetensors"].load_s == 47.99
    assert all(r.checkpoint_gb == 15 for r in rows.values())


def test_presets_load_as_typed_rows():
    assert all(p.input_usd_per_mtok > 0 for p in P.serverless_prices())
    seed = next(g for g in P.gpu_hour_prices() if g.key == "seed-h200")
    assert seed.usd_per_gpu_hour == 3.20 and seed.capacity_tokens_per_min == 720_000
    assert all(m.layers > 0 and m.kv_heads > 0 for m in P.models())


def test_edited_table_rows_become_specs_or_clear_messages():
    row = {**P.models()[0].to_dict(), "key": None, "label": "my 8B", "active_params_b": float("nan"), "layers": 32.0}
    m = P.model_from_record(row)
    assert m.key == "my 8B" and m.layers == 32 and isinstance(m.layers, int) and m.active_params_b is None
    with pytest.raises(CapacityError, match="'half-typed': the kv_heads cell is empty"):
        P.model_from_record(
            {
                "label": "half-typed",
                "params_b": 7,
                "layers": 28,
                "kv_heads": float("nan"),
                "head_dim": 128,
                "d_model": 3584,
            }
        )
    a100 = next(g for g in P.gpus() if g.key == "A100-80GB").to_dict()
    assert P.gpu_from_record({**a100, "fp8_dense_tflops": float("nan")}).fp8_dense_tflops is None
    with pytest.raises(CapacityError, match="memory_gib must be a finite number greater than 0, got 0"):
        P.gpu_from_record({**a100, "memory_gib": 0})
    with pytest.raises(
        CapacityError, match=r"'A100 .*': Memory \(GiB\) must be a finite number greater than 0, got inf"
    ):
        P.gpu_from_record({**a100, "memory_gib": float("inf")}, {"memory_gib": "Memory (GiB)"})  # as the table heads it
    with pytest.raises(CapacityError, match="a GPU row has an empty GPU cell"):
        P.gpu_from_record({**a100, "key": None, "label": "  "}, {"label": "GPU"})
    assert P.gpu_from_record({**a100, "label": float("nan")}).label == a100["key"]  # an emptied name: the key


def test_a_gpu_preset_without_a_capacity_claim_borrows_the_first_claim():
    def preset(key, claim=None, note=""):
        return P.GpuHourPrice(key, "p", "g", 2.0, "src", "2025-01", capacity_tokens_per_min=claim, token_note=note)

    plain, claimed, other = preset("plain"), preset("claimed", 720_000, "per node"), preset("other", 1_000, "x")
    presets = [plain, claimed, other]
    assert P.capacity_claim(other, presets) == (1_000.0, "x")  # its own claim first
    assert P.capacity_claim(plain, presets) == (720_000.0, "per node")  # the first preset with one, and its note
    assert P.capacity_claim(plain, [plain]) == (0.0, "")  # no claim anywhere: 0
    # the shipped presets: every one starts from a claim (the seed row has one)
    for g in P.gpu_hour_prices():
        assert P.capacity_claim(g, P.gpu_hour_prices())[0] > 0
