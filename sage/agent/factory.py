"""Choosing the backend: the OpenAI-compatible client when a model is configured, else
the offline synthesizer (also for the model name "offline", which no endpoint serves)."""

from __future__ import annotations

from typing import Any, Protocol

from sage.agent.backends.base import LLMBackend
from sage.config import OFFLINE_MODEL


class BackendSettings(Protocol):
    """What choosing a backend reads: sage.config.Settings, or the bench solver's copy of it."""

    model: str | None
    base_url: str | None
    preset: str
    seed: int
    search_budget: int
    temperature: float
    answer_max_tokens: int
    llm_timeout_s: float
    llm_retries: int


def wants_offline(model: str | None) -> bool:
    """No model, or `--model offline`: the built-in synthesizer."""
    return not model or model.strip().lower() == OFFLINE_MODEL


def backend_problem(model: str | None, base_url: str | None) -> str | None:
    """Why the backend of `model` cannot work at all (a hosted endpoint with no key), found
    without asking it; None when it may. Commands check this before any work."""
    if wants_offline(model):
        return None
    from sage.agent.backends.openai_backend import key_problem

    return key_problem(base_url)


def make_backend(settings: BackendSettings, task: Any) -> LLMBackend:
    if not wants_offline(settings.model):
        from sage.agent.backends.openai_backend import OpenAIBackend, OpenAIConfig

        return OpenAIBackend(OpenAIConfig(
            model=settings.model, base_url=settings.base_url, temperature=settings.temperature,
            max_tokens=settings.answer_max_tokens, timeout_s=settings.llm_timeout_s, retries=settings.llm_retries,
        ))
    from sage.agent.backends.offline import OfflineBackend

    return OfflineBackend(task, preset=settings.preset, seed=settings.seed, budget=settings.search_budget)
