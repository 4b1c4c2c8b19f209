"""GPU fit tab: the editable GPU and model presets, and weights + KV cache against each GPU's memory."""

import math

import pandas as pd
import streamlit as st

from planner import present
from planner.capacity import specs as P
from planner.capacity.errors import CapacityError
from planner.capacity.gpufit import FitOptions, fit, fit_table
from planner.capacity.weights import BYTES_PER_PARAM
from planner.inputs.untrusted import md_text
from planner.inputs.validate import CONTEXT_TOKENS, SEQUENCES
from ttft_planner_app.charts.capacity import gpu_fit_figure
from ttft_planner_app.views.capacity_tabs._common import dtype_pickers, source_caption, usable_share
from ttft_planner_app.widgets import number_input_for, persisted_preset, wrapped_table

__all__ = ["render"]


def render() -> tuple[dict[str, P.ModelSpec], dict[str, P.GpuSpec]]:
    """Draw the GPU fit tab; return the presets as edited here, (models by key, GPUs by key), for the Prefill tab.

    A row that does not parse is left out with a warning; when every row is out, the shipped presets stand in.
    """
    gpu_by_key = _edited_gpus()
    models = _edited_models()
    left, right = st.columns([2, 3], gap="large")
    gdef = P.gpu_defaults()
    with left:
        mkey = persisted_preset("Model", models, key="cap_fit_model")
        model = models[mkey]
        st.caption(source_caption(model.source, model.as_of))
        f_wdtype, f_kvdtype = dtype_pickers("cap_fit")
        ctx = number_input_for(
            CONTEXT_TOKENS,
            "Context length (tokens in flight per sequence)",
            value=32768,
            step=1024,
            key="cap_fit_ctx",
            persist=True,
        )
        seqs = number_input_for(SEQUENCES, "Concurrent sequences", value=8, key="cap_fit_seqs", persist=True)
        usable = usable_share("cap_fit_usable", gdef["usable_memory_fraction"], gdef["usable_memory_source"])
        fkey = persisted_preset("GPU", gpu_by_key, key="cap_fit_gpu")
    with right:
        try:
            kw: FitOptions = dict(
                weight_dtype=f_wdtype,
                kv_dtype=f_kvdtype,
                context_tokens=int(ctx),
                concurrent_sequences=int(seqs),
                usable_fraction=usable,
            )
            one = fit(model, gpu_by_key[fkey], **kw)
            (st.success if one.fits else st.error)(one.message)
            st.caption(
                f"KV cache: {one.kv_bytes_per_token / 1024:,.0f} KiB per token = 2 × "
                f"{model.layers} layers × {model.kv_heads} KV heads × "
                f"{model.head_dim} head dim × {BYTES_PER_PARAM[f_kvdtype]:g} bytes."
            )
            table = fit_table(model, list(gpu_by_key.values()), **kw)
            st.plotly_chart(gpu_fit_figure(table), key="cap_fit_chart")
            wrapped_table(pd.DataFrame(_fit_table(table)))  # every column in view at 1,400 px, in this column
        except CapacityError as exc:
            st.error(str(exc))
    return models, gpu_by_key


# Preset fields → the column headers the editors show (renamed back before parsing a row).
_GPU_COLUMNS = {
    "key": "Key",
    "label": "GPU",
    "memory_gib": "Memory (GiB)",
    "bandwidth_tb_per_s": "Bandwidth (TB/s)",
    "bf16_dense_tflops": "BF16 dense TFLOPS",
    "fp8_dense_tflops": "FP8 dense TFLOPS",
    "source": "Source",
    "as_of": "As of",
}
_MODEL_COLUMNS = {
    "key": "Key",
    "label": "Model",
    "params_b": "Parameters (B)",
    "layers": "Layers",
    "kv_heads": "KV heads",
    "head_dim": "Head dim",
    "d_model": "Model width",
    "attention_heads": "Attention heads",
    "active_params_b": "Active parameters (B, MoE)",
    "source": "Source",
    "as_of": "As of",
}


def _edit(df: pd.DataFrame, columns: dict[str, str], **kwargs) -> pd.DataFrame:
    """A data editor with labelled headers; returns the edited frame under the preset field names."""
    shown = df.rename(columns=columns)
    edited = st.data_editor(shown, hide_index=True, **kwargs)
    return edited.rename(columns={v: k for k, v in columns.items()})


def _edited_gpus() -> dict[str, P.GpuSpec]:
    gpu_df = pd.DataFrame([g.__dict__ for g in P.gpus()])
    gpu_df["fp8_dense_tflops"] = [P.fp8_cell(v) for v in gpu_df["fp8_dense_tflops"]]  # "—", never "None"
    with st.expander("GPU presets (editable: dense TFLOPS, memory in GiB, bandwidth, with source and date)"):
        gpu_df = _edit(
            gpu_df,
            _GPU_COLUMNS,
            disabled=["Key", "Source", "As of"],
            key="cap_gpu_editor",
            column_config={
                _GPU_COLUMNS["fp8_dense_tflops"]: st.column_config.TextColumn(
                    help=f"{P.NO_FP8} = no FP8: the GPU has no FP8 tensor cores (A100, A10G), so FP8 prefill is "
                    "not offered for it. Type a number to give one."
                )
            },
        )
        st.caption(f"FP8 dense TFLOPS {P.NO_FP8}: no FP8 (the GPU has no FP8 tensor cores).")
    gpu_list = []
    for r in gpu_df.to_dict(orient="records"):
        try:
            gpu_list.append(P.gpu_from_record(r, _GPU_COLUMNS))
        except CapacityError as exc:
            st.warning(f"{md_text(exc)}. Until then that row is left out of the GPU lists.", icon=":material/edit:")
    if not gpu_list:
        st.info("Every GPU row is left out: the shipped GPU presets stand in until one is filled in.")
    return {g.key: g for g in gpu_list} or {g.key: g for g in P.gpus()}


def _edited_models() -> dict[str, P.ModelSpec]:
    model_df = pd.DataFrame([m.__dict__ for m in P.models()])
    with st.expander("Model presets (editable; add a row for a custom model)"):
        model_df = _edit(model_df, _MODEL_COLUMNS, num_rows="dynamic", key="cap_model_editor")
    models = {}
    for r in model_df.to_dict(orient="records"):
        if all(present.is_missing(v) or (isinstance(v, str) and not v.strip()) for v in r.values()):
            continue  # a row just added and not filled in yet
        try:
            m = P.model_from_record(r, _MODEL_COLUMNS)
            models[m.key] = m
        except CapacityError as exc:
            st.warning(f"{md_text(exc)}. Until then that row is left out of the model lists.", icon=":material/edit:")
    if not models:
        st.info("Every model row is left out: the shipped model presets stand in until one is filled in.")
    return models or {m.key: m for m in P.models()}


def _gib(v) -> str:
    """Memory as the GPU fit counts it: GiB (2³⁰ bytes), the unit of the card's size and of vLLM's budget."""
    return present.MISSING if present.is_missing(v) else f"{v:,.1f} GiB"


def _fit_table(table: pd.DataFrame) -> list[dict]:
    """fit_table() rows as the user reads them: labelled columns with units, "does not fit" in words."""
    return [
        {
            "GPU": r["gpu"],
            "Memory per GPU": _gib(r["memory_gib"]),
            "Weights + KV cache": _gib(r["total_gib"]),
            "GPUs needed": present.count(r["min_gpus"]),
            "Tensor-parallel GPUs": "no single node"
            if present.is_missing(r["tp_gpus"])
            else present.count(r["tp_gpus"]),
            "Headroom": _gib(r["headroom_gib"]),
            "Max concurrent sequences": present.MISSING
            if present.is_missing(r["max_sequences"])
            or (isinstance(r["max_sequences"], float) and math.isinf(r["max_sequences"]))
            else present.count(r["max_sequences"]),
            "Fits": "yes" if r["fits"] else "no",
        }
        for r in table.to_dict(orient="records")
    ]
