"""The sample logs shipped in assets/sample_logs: one small, real-shaped file per supported format."""

from __future__ import annotations

from pathlib import Path

from planner.presets import ASSETS_DIR

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
}


def samples() -> dict[str, str]:
    """File name → label, for the samples present on disk."""
    return {name: label for name, label in _LABELS.items() if (SAMPLE_DIR / name).exists()}
