"""The sample logs shipped in assets/sample_logs: one small file per supported format (sources in its README.md)."""

from __future__ import annotations

from pathlib import Path

from planner.asset_files import ASSETS_DIR

__all__ = ["SAMPLE_DIR", "samples"]

SAMPLE_DIR: Path = ASSETS_DIR / "sample_logs"

_LABELS = {
    "openai_chat_completions.jsonl": "OpenAI chat completions (JSON Lines)",
    "openai_batch_output.jsonl": "OpenAI Batch API output",
    "anthropic_messages.jsonl": "Anthropic Messages responses",
    "litellm_spend_logs.json": "LiteLLM spend logs (with first-token times)",
    "langfuse_observations.json": "Langfuse observations export (with first-token times)",
    "otel_genai_spans.jsonl": "OpenTelemetry GenAI spans (OTLP JSON)",
    "requests.csv": "CSV with standard column names",
    "gateway_custom_columns.csv": "CSV with custom column names (needs a mapping)",
    "prompts_without_counts.jsonl": "Prompts without token counts (estimated)",
    "litellm_spend_logs.csv": "LiteLLM spend-log export as CSV (quoted JSON metadata)",
    "azure_code_2023.csv": "Azure LLM inference trace 2023 (real rows, CC-BY 4.0)",
    "azure_2024_synthetic.csv": "Azure LLM inference trace 2024 format (synthetic rows)",
    "burstgpt_synthetic.csv": "BurstGPT trace format (synthetic rows)",
    "mooncake_conversation.jsonl": "Mooncake trace with hash_ids (real rows, Apache-2.0)",
}


def samples() -> dict[str, str]:
    """File name → label, for the samples present on disk."""
    return {name: label for name, label in _LABELS.items() if (SAMPLE_DIR / name).exists()}
