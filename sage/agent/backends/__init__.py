"""Chat backends: the Protocol, the OpenAI-compatible client, the offline synthesizer."""

from sage.agent.backends.base import BackendError, BackendUnavailable, Completion, LLMBackend, Message

__all__ = ["BackendError", "BackendUnavailable", "Completion", "LLMBackend", "Message"]
