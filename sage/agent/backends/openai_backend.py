"""Any OpenAI-compatible chat endpoint, through the official `openai` client.

The client's own retries are switched off (max_retries=0): we retry here so that every
retry is counted and the backoff is visible to tests (the sleep function is injectable).
Only transient failures are retried (429 other than an exhausted quota, 5xx, timeouts,
dropped connections). A key is the user's to fix, so its absence is said before any call:
the hosted OpenAI endpoint without OPENAI_API_KEY fails at once (`MissingApiKey`), and a
401/403 from any endpoint is not retried. A server on the user's own machine may need no
key at all, so a `--base-url` elsewhere gets a placeholder.
"""

from __future__ import annotations

import email.utils
import os
import time
from collections.abc import Callable
from urllib.parse import urlparse

import openai
from pydantic import BaseModel, Field

from sage.agent.backends.base import BackendError, BackendUnavailable, Completion, Message
from sage.config import ANSWER_MAX_TOKENS

# Servers started on a laptop (vLLM, llama.cpp, Ollama) accept any key; the client
# insists on having one.
PLACEHOLDER_KEY = "sk-local-placeholder"
# Hosted endpoints that refuse every request without a key: asking them would only cost the
# user the retries before the same answer.
KEYED_HOSTS = frozenset({"api.openai.com"})
DEFAULT_BASE_URL = "https://api.openai.com/v1"
KEY_HINT = "set OPENAI_API_KEY, or use --model offline (the built-in synthesizer, no key needed)"


class OpenAIConfig(BaseModel):
    model: str
    base_url: str | None = None  # None: OPENAI_BASE_URL, else the client's default
    temperature: float = 0.2
    max_tokens: int = Field(ANSWER_MAX_TOKENS, ge=1, description="every request's completion limit (one answer)")
    timeout_s: float = 120.0
    retries: int = Field(4, ge=0, description="extra attempts after a 429, 5xx, timeout or dropped connection")
    backoff_s: float = Field(1.0, ge=0, description="first backoff; doubles on each retry")
    max_backoff_s: float = Field(30.0, ge=0, description="cap on any single wait, Retry-After included")


class UsageStats(BaseModel):
    """Running totals for this backend object; the loop reads per-call figures from Completion."""

    calls: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    waited_s: float = 0.0


class OpenAIBackend:
    def __init__(
        self,
        config: OpenAIConfig,
        *,
        api_key: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.config = config
        self.name = f"openai:{config.model}"
        self.stats = UsageStats()
        self._sleep = sleep
        base_url = resolved_base_url(config.base_url)
        key = api_key or os.environ.get("OPENAI_API_KEY")
        problem = key_problem(base_url, key)
        if problem is not None:
            raise MissingApiKey(problem)
        self._client = openai.OpenAI(
            api_key=key or PLACEHOLDER_KEY,
            base_url=base_url,
            timeout=config.timeout_s,
            max_retries=0,
        )
        self.base_url = str(self._client.base_url)

    def complete(self, messages: list[Message]) -> Completion:
        payload = [{"role": m.role, "content": m.content} for m in messages]
        attempt = 0
        while True:
            try:
                response = self._client.chat.completions.create(
                    model=self.config.model,
                    messages=payload,
                    temperature=self.config.temperature,
                    max_tokens=self.config.max_tokens,
                )
                break
            except (openai.RateLimitError, openai.InternalServerError, openai.APITimeoutError, openai.APIConnectionError) as exc:
                # APITimeoutError is a subclass of APIConnectionError; both are transient.
                # An exhausted quota also comes as a 429, but waiting does not refill it.
                if _quota_exhausted(exc):
                    raise BackendUnavailable(f"{self.base_url}: the account's quota is exhausted (HTTP 429: "
                                             f"{_detail(exc)}); {KEY_HINT}") from exc
                if attempt >= self.config.retries:
                    raise _final_error(exc, self.base_url, attempt) from exc
                wait = self._backoff(attempt, exc)
                attempt += 1
                self.stats.retries += 1
                self.stats.waited_s += wait
                self._sleep(wait)
            except openai.APIStatusError as exc:
                raise _status_error(exc, self.config.model, self.base_url) from exc
        return self._account(response)

    def _backoff(self, attempt: int, exc: Exception) -> float:
        wait = self.config.backoff_s * (2**attempt)
        if isinstance(exc, openai.APIStatusError):
            retry_after = _retry_after_seconds(exc.response.headers.get("retry-after"))
            if retry_after is not None:
                wait = retry_after
        return min(wait, self.config.max_backoff_s)

    def _account(self, response) -> Completion:
        if not response.choices:
            raise BackendError(f"{self.base_url}: the endpoint answered with no choices")
        choice = response.choices[0]
        text = choice.message.content or ""
        usage = response.usage
        prompt = usage.prompt_tokens if usage else 0
        completion = usage.completion_tokens if usage else 0
        self.stats.calls += 1
        self.stats.prompt_tokens += prompt
        self.stats.completion_tokens += completion
        return Completion(text=text, prompt_tokens=prompt, completion_tokens=completion,
                          truncated=choice.finish_reason == "length")


class MissingApiKey(BackendUnavailable):
    """The endpoint needs a key and none is set: said before any request."""


def resolved_base_url(base_url: str | None) -> str:
    """--base-url, else OPENAI_BASE_URL, else the hosted OpenAI endpoint (the client's default)."""
    return base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL


def key_problem(base_url: str | None, api_key: str | None = None) -> str | None:
    """Why a request to `base_url` cannot succeed for want of a key (None: it may). `api_key`
    defaults to OPENAI_API_KEY."""
    url = resolved_base_url(base_url)
    if (api_key or os.environ.get("OPENAI_API_KEY")) or urlparse(url).hostname not in KEYED_HOSTS:
        return None
    return f"OPENAI_API_KEY is not set, and {url} needs a key: {KEY_HINT}"


def _quota_exhausted(exc: Exception) -> bool:
    if not isinstance(exc, openai.RateLimitError):
        return False
    body = exc.body if isinstance(exc.body, dict) else {}
    inner = body.get("error", body)
    return isinstance(inner, dict) and inner.get("code") == "insufficient_quota"


def _retry_after_seconds(value: str | None) -> float | None:
    """Retry-After is either delta-seconds or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time()) if when is not None else None


def _final_error(exc: Exception, base_url: str, retries: int) -> BackendError:
    if isinstance(exc, openai.APIConnectionError) and not isinstance(exc, openai.APITimeoutError):
        return BackendUnavailable(f"cannot reach the LLM endpoint {base_url} ({exc}); retried {retries} times")
    if isinstance(exc, openai.APIStatusError):
        return BackendError(f"{base_url} kept failing with HTTP {exc.status_code} after {retries} retries: {_detail(exc)}")
    return BackendError(f"{base_url}: {exc} (after {retries} retries)")


def _status_error(exc: openai.APIStatusError, model: str, base_url: str) -> BackendError:
    if exc.status_code in (401, 403):
        return BackendUnavailable(f"{base_url} refused the credentials (HTTP {exc.status_code}: {_detail(exc)}); "
                                  f"{KEY_HINT}")
    if exc.status_code == 404:
        return BackendUnavailable(f"{base_url} does not serve model {model!r} or the chat API (HTTP 404): {_detail(exc)}")
    return BackendError(f"{base_url} rejected the request (HTTP {exc.status_code}): {_detail(exc)}")


def _detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and "message" in inner:
            return str(inner["message"])
    return exc.message
