"""AppTest: GPU memory in GiB on the Capacity & cost page (issue 45): the card's "80GB" is 80 GiB, as CUDA and vLLM
count it, and the GPU fit table, the preset editor and the Prefix cache tab say so."""

from planner.capacity import specs as P
from planner.capacity.gpufit import fit
from planner.kvcache.capacity import kv_capacity
from planner.kvcache.chains import read_prefix_trace
from planner.logs.samples import SAMPLE_DIR
from tests.app.conftest import open_page


def test_the_gpu_fit_table_and_the_prefix_tab_state_memory_in_gib(app):
    open_page("capacity", app)
    assert not app.exception
    table = next(t.value for t in app.table if "Weights + KV cache" in t.value.columns)
    h100 = next(g for g in P.gpus() if g.key == "H100")
    row = table[table["GPU"] == h100.label].iloc[0]
    assert row["Memory per GPU"] == "80.0 GiB"  # not "80.0 GB": the card holds 80 × 2³⁰ bytes
    model = next(m for m in P.models() if m.key == app.selectbox(key="cap_fit_model").value)
    want = fit(model, h100, usable_fraction=float(P.gpu_defaults()["usable_memory_fraction"]))
    assert row["Weights + KV cache"].endswith(" GiB") and want.usable_gib_per_gpu == 72.0
    # (the preset editor heads the column "Memory (GiB)": tests/app/test_capacity.py edits a cell under it)

    # the Prefix cache tab's KV figures: 2× L40S (48 GiB each) at 0.9 = 86.4 GiB usable for the 32B coder
    cap = kv_capacity(
        next(m for m in P.models() if m.key == "qwen2.5-coder-32b"),
        next(g for g in P.gpus() if g.key == "L40S"),
        usable_fraction=float(P.gpu_defaults()["usable_memory_fraction"]),
        block_tokens=read_prefix_trace(SAMPLE_DIR / "agent_sessions.jsonl").block_tokens,
    )
    assert round(cap.usable_gib, 1) == 86.4
    markdown = [str(m.value).replace("\\", "") for m in app.markdown]
    assert f"**KV cache per replica:** {cap.label()}" in markdown and "86.4 GiB usable" in cap.label()
    held = cap.blocks * cap.block_tokens
    caption = next(str(c.value) for c in app.caption if "KV tokens per replica (whole" in str(c.value))
    assert f"{held:,} KV tokens per replica" in caption
    assert f"{P.gib(held * cap.kv_bytes_per_token):,.1f} GiB of the 86.4 GiB usable" in caption
