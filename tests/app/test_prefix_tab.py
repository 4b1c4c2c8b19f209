"""AppTest: the Capacity & cost page's Prefix cache tab — reuse ceiling, KV capacity, regime, sentence, hand-off.

Every figure the tab shows is checked against the library (planner.kvcache) run on the same inputs, the way
`ttft-planner prefix` runs it, never against numbers written down here.
"""

import os
import re
import tempfile

import pytest

from planner.capacity import specs as P
from planner.capacity.prefill import estimate
from planner.kvcache.capacity import kv_capacity
from planner.kvcache.chains import read_prefix_trace
from planner.kvcache.regime import capacity_grid, knee, regime, sentence
from planner.kvcache.simulate import Routing, ServiceRates, reuse_ceiling
from planner.logs.samples import SAMPLE_DIR
from planner.worksheet.budget import Worksheet
from tests.app.conftest import chart_spec, open_page

AGENT, MOONCAKE = "agent_sessions.jsonl", "mooncake_conversation.jsonl"
ALL = [r.value for r in Routing]


def plain(text: str) -> str:
    """A Markdown value as its reader sees it (the page escapes Markdown in outside text with backslashes)."""
    return re.sub(r"\\(.)", r"\1", text)


def texts(at, kind: str) -> list[str]:
    return [plain(str(e.value)) for e in at.get(kind)]


def routing_table(at):
    """The table at the deployment's capacity (the only wrapped table with a Routing column), as read."""
    table = next(t.value for t in at.table if "Routing" in t.value.columns)
    return table.map(lambda v: plain(v).replace("\u200b", "") if isinstance(v, str) else v)


def expected(
    sample: str,
    model_key: str,
    gpu_key: str,
    replicas: int,
    routings: list[str],
    ms_per_1k: float | None = None,
    engine: str = "vllm",
) -> dict:
    """What the library says for these inputs, computed as `ttft-planner prefix` does (prefill rate read from the
    prefill model at an 8,192-token prompt unless a slope is given; usable share: the GPU defaults')."""
    trace = read_prefix_trace(SAMPLE_DIR / sample)
    ceiling, within = reuse_ceiling(trace.requests, trace.block_tokens)
    model = next(m for m in P.models() if m.key == model_key)
    gpu = next(g for g in P.gpus() if g.key == gpu_key)
    cap = kv_capacity(
        model,
        gpu,
        usable_fraction=float(P.gpu_defaults()["usable_memory_fraction"]),
        block_tokens=trace.block_tokens,
    )
    if ms_per_1k:
        ms_per_token = ms_per_1k / 1000
    else:
        ms_per_token = 1000 / estimate(model, gpu, 8192, gpus=cap.gpus_per_replica).tokens_per_s
    rates = ServiceRates(prefill_ms_per_token=ms_per_token)
    at_cap = regime(trace, [cap.tokens], [replicas, replicas + 1], routings, rates, engine)
    sweep = regime(trace, capacity_grid(trace, cap.tokens), [replicas], routings, rates, engine)
    deployment = f"{replicas} replica{'s' if replicas > 1 else ''} of {cap.gpus_per_replica}× {gpu.label} ({cap.model})"
    return {
        "trace": trace,
        "ceiling": ceiling,
        "within": within,
        "cap": cap,
        "at": {(p.routing, p.replicas): p for p in at_cap},
        "knees": {r: knee([p for p in sweep if p.routing == r]) for r in routings},
        "sentence": sentence({(p.routing, p.replicas): p for p in at_cap}, deployment, replicas),
        "deployment": deployment,
        "gpu": gpu,
    }


def test_the_agent_sample_shows_the_ceiling_the_capacity_and_the_sentence_the_library_computes(app):
    open_page("capacity", app)
    # the tab opens on the agent sessions, a 32B coder on L40S, two replicas, every routing
    assert app.selectbox(key="cap_px_trace").value == AGENT
    assert app.selectbox(key="cap_px_model").value == "qwen2.5-coder-32b"
    assert app.selectbox(key="cap_px_gpu").value == "L40S"
    assert app.number_input(key="cap_px_reps").value == 2
    assert app.multiselect(key="cap_px_routing").value == ALL
    want = expected(AGENT, "qwen2.5-coder-32b", "L40S", 2, ALL)
    trace = want["trace"]

    captions, markdown = texts(app, "caption"), texts(app, "markdown")
    assert any(
        f"{len(trace.requests)} requests, 10 sessions; prefix identity from {trace.source}" in c for c in captions
    )
    assert trace.approximate and any("An estimate:" in c for c in captions)
    assert any(
        f"{want['ceiling']:.1%} of prompt tokens repeat an earlier request's prefix "
        f"({want['within']:.1%} within the same session)" in m
        for m in markdown
    ), markdown
    assert f"**KV cache per replica:** {want['cap'].label()}" in markdown
    assert want["sentence"].startswith(f"On {want['deployment']} with round-robin routing")
    assert want["sentence"] in texts(app, "info")

    table = routing_table(app)
    assert list(table.columns) == [
        "Routing",
        "Replicas",
        "Hit rate",
        "Requests with a hit",
        "Fully cached",
        "Uncached prompt p95",
        "Predicted prefill p95",
    ]
    assert len(table) == 2 * len(ALL)  # the deployment's replicas and one more (the sentence's "third replica")
    for row in table.to_dict(orient="records"):
        p = want["at"][(row["Routing"], int(row["Replicas"]))]
        assert row["Hit rate"] == f"{p.hit_rate:.1%}"
        assert row["Fully cached"] == f"{p.fully_cached} of {p.requests}"
        assert row["Requests with a hit"] == f"{p.request_hit_fraction:.1%}"
        assert row["Uncached prompt p95"] == f"{p.uncached_p95:,.0f} tokens"
        assert row["Predicted prefill p95"] == f"{p.ttft_p95_ms:,.0f} ms"

    spec = chart_spec(app, "cap_px_chart")
    names = [t.get("name") for t in spec["data"] if t.get("showlegend") is not False]
    held = want["cap"].blocks * want["cap"].block_tokens
    assert names[: len(ALL)] == ALL
    assert f"this deployment: {held:,} tokens" in names
    for k in set(want["knees"].values()):
        assert any(n.startswith(f"knee at {k:,} tokens") for n in names), names
    assert spec["layout"]["xaxis2"]["type"] == "log"


def test_the_engine_picks_the_eviction_rule_the_chart_knees_and_sentence_assume(app):
    open_page("capacity", app)
    assert app.selectbox(key="cap_px_engine").value == "vllm"
    assert any(
        "Eviction: tail-first: each replica's cache frees a request's blocks tail first" in c
        for c in texts(app, "caption")
    )
    app.selectbox(key="cap_px_engine").set_value("sglang").run()
    assert not app.exception
    want = expected(AGENT, "qwen2.5-coder-32b", "L40S", 2, ALL, engine="sglang")
    assert any(
        "Eviction: radix-leaf: each replica's cache evicts radix-tree leaves first" in c for c in texts(app, "caption")
    )
    assert want["sentence"] in texts(app, "info") and want["sentence"].endswith("as SGLang does).")
    names = [t.get("name") for t in chart_spec(app, "cap_px_chart")["data"] if t.get("showlegend") is not False]
    for k in set(want["knees"].values()):
        assert any(n.startswith(f"knee at {k:,} tokens") for n in names), names
    row = routing_table(app).iloc[0]
    assert row["Hit rate"] == f"{want['at'][(row['Routing'], int(row['Replicas']))].hit_rate:.1%}"


def test_another_trace_deployment_and_a_typed_slope_follow_the_library(app):
    open_page("capacity", app)
    app.selectbox(key="cap_px_trace").set_value(MOONCAKE)
    app.selectbox(key="cap_px_model").set_value("llama-3.1-8b")
    app.selectbox(key="cap_px_gpu").set_value("H100")
    app.number_input(key="cap_px_reps").set_value(3)
    app.multiselect(key="cap_px_routing").set_value(["round-robin", "session"])
    app.number_input(key="cap_px_ms1k").set_value(150.0).run()
    assert not app.exception
    want = expected(MOONCAKE, "llama-3.1-8b", "H100", 3, ["round-robin", "session"], ms_per_1k=150.0)
    markdown = texts(app, "markdown")
    assert any(
        f"{want['ceiling']:.1%} of prompt tokens repeat an earlier request's prefix (no session ids in this trace)" in m
        for m in markdown
    ), markdown
    assert not any("An estimate:" in c for c in texts(app, "caption"))  # hash_ids: the prefix identity is exact
    assert f"**KV cache per replica:** {want['cap'].label()}" in markdown
    assert any("measured slope 150 ms per 1K tokens" in c for c in texts(app, "caption"))
    assert want["sentence"] in texts(app, "info")
    table = routing_table(app)
    assert set(table["Routing"]) == {"round-robin", "session"} and set(table["Replicas"]) == {"3", "4"}
    row = table[(table["Routing"] == "session") & (table["Replicas"] == "3")].iloc[0]
    assert row["Predicted prefill p95"] == f"{want['at'][('session', 3)].ttft_p95_ms:,.0f} ms"


@pytest.mark.parametrize(
    ("model", "gpu", "tp", "says"),
    [
        ("llama-3.1-405b", "L4", 0, "leaves no KV room on 8× L4 24GB"),  # auto: not even on 8 GPUs
        ("llama-3.1-70b", "L40S", 1, "leaves no KV room on 1× L40S 48GB"),  # one GPU typed
    ],
)
def test_a_model_that_does_not_fit_is_a_clear_error_not_a_traceback(app, model, gpu, tp, says):
    open_page("capacity", app)
    app.selectbox(key="cap_px_model").set_value(model)
    app.selectbox(key="cap_px_gpu").set_value(gpu)
    app.selectbox(key="cap_px_tp").set_value(tp).run()
    assert not app.exception, [e.value for e in app.exception]
    errors = [e for e in texts(app, "error") if e.startswith("No KV cache on this deployment")]
    assert len(errors) == 1 and says in errors[0], texts(app, "error")
    assert "Pick a larger GPU, more GPUs per replica or a smaller weight format" in errors[0]
    assert not [c for c in app.get("plotly_chart") if c.proto.id and "cap_px_chart" in c.proto.id]
    assert not [b for b in app.button if b.key == "cap_px_use"]  # nothing to hand over
    assert not any("Routing" in t.value.columns for t in app.table)
    # the trace's own figures do not depend on the deployment: still shown
    assert any("of prompt tokens repeat an earlier request's prefix" in m for m in texts(app, "markdown"))


def test_the_hand_off_puts_the_uncached_p95_on_the_worksheet_with_its_provenance(app):
    open_page("capacity", app)
    app.selectbox(key="cap_px_pick").set_value("session").run()
    want = expected(AGENT, "qwen2.5-coder-32b", "L40S", 2, ALL)
    p95 = want["at"][("session", 2)].uncached_p95
    assert any(f"p95 prompt to {p95:,.0f} tokens (uncached, session routing)" in c for c in texts(app, "caption"))
    app.button(key="cap_px_use").click().run()
    assert not app.exception, [e.value for e in app.exception]

    # the Worksheet page, with the figure in its field and where it came from under it
    assert app.title[0].value == "TTFT worksheet"
    assert app.number_input(key="prompt_p95").value == pytest.approx(p95)
    assert app.number_input(key="cache_hit").value == 0.0
    captions = texts(app, "caption")
    described = next(c for c in captions if "uncached p95 modelled from your trace" in c)
    assert described.startswith(
        ":material/sensors: model · uncached p95 modelled from your trace (Sample: coding-agent sessions), "
    )
    assert f"this deployment: session routing, {want['deployment']}, bf16 KV" in described
    assert f"n={len(want['trace'].requests)}" in described and "an estimate" in described
    assert any(
        c.startswith(":material/sensors: model · 0: the p95 prompt handed over is the uncached part") for c in captions
    )
    fig = app.session_state["ws_figures"]["prompt_tokens_p95"]
    assert fig["source"] == "model" and fig["unit"] == "tokens" and fig["value"] == pytest.approx(p95)
    assert fig["n"] == len(want["trace"].requests)
    # no double count: the prefill needed is the uncached p95 at the worksheet's rate, nothing taken off again
    rate = Worksheet().prefill_tokens_per_s.value
    needed = next(m.value for m in app.metric if m.label == "Prefill needed")
    assert needed == f"{p95 / rate * 1000:,.0f} ms"
    # and the address bar carries it with its provenance, as every hand-off does
    assert float(app.query_params["prompt_p95"]) == pytest.approx(p95) and "prompt_p95_from" in app.query_params


def test_an_upload_is_read_from_memory_never_stored_nor_its_text_shown(app, tmp_path, monkeypatch):
    from planner.store import database_url, open_store
    from planner.store.logs import list_uploads

    spool = tmp_path / "tmp"
    spool.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spool))
    data = (SAMPLE_DIR / AGENT).read_bytes()
    open_page("capacity", app)
    app.selectbox(key="cap_px_trace").set_value("upload").run()
    assert any("Upload a trace" in i for i in texts(app, "info"))
    app.file_uploader(key="cap_px_file").set_value([("team trace.jsonl", data, "application/jsonl")]).run()
    assert not app.exception, [e.value for e in app.exception]
    want = expected(AGENT, "qwen2.5-coder-32b", "L40S", 2, ALL)
    assert any(c.startswith("team trace.jsonl: 60 requests, 10 sessions") for c in texts(app, "caption")), texts(
        app, "caption"
    )
    assert want["sentence"] in texts(app, "info")
    # the temporary copy is gone, nothing went to the store, and no prompt text is on the page
    assert os.listdir(spool) == []
    eng = open_store(database_url())
    assert list_uploads(eng) == []
    eng.dispose()
    words = re.findall(r"\w+(?: \w+){5}", data.decode()[300:2000])  # runs of six words from the prompts
    shown = " ".join(texts(app, "markdown") + texts(app, "caption") + texts(app, "info"))
    assert words and not any(w in shown for w in words)

    bad = b'{"timestamp": 1, "hash_ids": [1], "input_length": 600}\nnot json\n'
    app.file_uploader(key="cap_px_file").set_value([("broken.jsonl", bad, "application/jsonl")]).run()
    assert not app.exception
    # the bad line is named among the rejected lines, as on the Logs page, and the good one read (issue 42 item 17)
    assert [e.label for e in app.expander if "rejected" in e.label] == ["1 line rejected"]
    assert any(c.startswith("broken.jsonl: 1 requests") for c in texts(app, "caption")), texts(app, "caption")
    assert os.listdir(spool) == []
