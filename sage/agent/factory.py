"""Choosing the backend: the OpenAI-compatible client when a model is configured, else
the offline synthesizer (also for the model name "offline", which no endpoint serves)."""

from __future__ import annotations

from typing import Any

from sage.agent.backends.base import LLMBackend
from sage.config import OFFLINE_MODEL


def wants_offline(model: str | None) -> bool:
    """No model, or `--model offline`: the built-in synthesizer."""
    return not model or model.strip().lower() == OFFLINE_MODEL


def make_backend(settings: Any, task: Any) -> LLMBackend:
    """`settings` is sage.config.Settings (model, base_url, temperature, ...)."""
    if not wants_offline(settings.model):
        from sage.agent.backends.openai_backend import OpenAIBackend, OpenAIConfig

        return OpenAIBackend(OpenAIConfig(
            model=settings.model, base_url=settings.base_url, temperature=settings.temperature,
            max_tokens=settings.max_tokens, timeout_s=settings.llm_timeout_s, retries=settings.llm_retries,
        ))
    from sage.agent.backends.offline import OfflineBackend

    return OfflineBackend(task, preset=settings.preset, seed=settings.seed)
