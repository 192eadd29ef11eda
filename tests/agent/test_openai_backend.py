"""The real openai client against the fake server on 127.0.0.1: retries, errors, tokens."""

import pytest

from sage.agent.backends import BackendError, BackendUnavailable, Message
from sage.agent.backends.openai_backend import MissingApiKey, OpenAIBackend, OpenAIConfig, key_problem
from sage.agent.fake_server import FakeOpenAIServer


@pytest.fixture
def server():
    with FakeOpenAIServer() as s:
        yield s


def _backend(server, **over):
    waits: list[float] = []
    config = OpenAIConfig(model="fake-coder", base_url=server.base_url, timeout_s=5, **over)
    return OpenAIBackend(config, api_key="sk-test", sleep=waits.append), waits


def test_answer_and_tokens_are_counted(server):
    server.reply("first", prompt_tokens=120, completion_tokens=30)
    server.reply("second", prompt_tokens=200, completion_tokens=45)
    backend, _ = _backend(server, temperature=0.0, max_tokens=777)
    a = backend.complete([Message(role="system", content="sys"), Message(role="user", content="hi", facts={"x": 1})])
    b = backend.complete([Message(role="user", content="again")])
    assert (a.text, a.prompt_tokens, a.completion_tokens) == ("first", 120, 30)
    assert b.total_tokens == 245
    assert backend.stats.calls == 2
    assert (backend.stats.prompt_tokens, backend.stats.completion_tokens) == (320, 75)
    sent = server.requests[0]
    assert sent["model"] == "fake-coder"
    assert sent["temperature"] == 0.0 and sent["max_tokens"] == 777
    # facts are for the offline synthesizer only: never sent over the wire
    assert sent["messages"] == [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]


def test_429_then_success_is_retried_honouring_retry_after(server):
    server.fail(429, "slow down", retry_after="7")
    server.fail(503, "overloaded")
    server.reply("ok", prompt_tokens=1, completion_tokens=1)
    backend, waits = _backend(server, backoff_s=0.5, max_backoff_s=60)
    assert backend.complete([Message(role="user", content="x")]).text == "ok"
    # Retry-After wins over the backoff; the 503 falls back to backoff_s * 2**1
    assert waits == [7.0, 1.0]
    assert backend.stats.retries == 2
    assert len(server.requests) == 3


def test_retry_after_is_capped(server):
    server.fail(429, retry_after="3600")
    server.reply("ok")
    backend, waits = _backend(server, max_backoff_s=5)
    backend.complete([Message(role="user", content="x")])
    assert waits == [5.0]


def test_gives_up_after_the_configured_retries(server):
    for _ in range(3):
        server.fail(500, "boom")
    backend, waits = _backend(server, retries=2, backoff_s=0.25)
    with pytest.raises(BackendError, match="HTTP 500 after 2 retries: boom"):
        backend.complete([Message(role="user", content="x")])
    assert waits == [0.25, 0.5]
    assert server.pending == 0


def test_client_errors_are_not_retried(server):
    server.fail(401, "bad key")
    backend, waits = _backend(server)
    with pytest.raises(BackendUnavailable) as raised:
        backend.complete([Message(role="user", content="x")])
    assert "HTTP 401: bad key" in str(raised.value)
    assert "OPENAI_API_KEY" in str(raised.value) and "--model offline" in str(raised.value)
    assert waits == [] and len(server.requests) == 1


def test_an_exhausted_quota_is_not_retried(server):
    server.fail(429, "You exceeded your current quota", code="insufficient_quota")
    backend, waits = _backend(server)
    with pytest.raises(BackendUnavailable, match="quota is exhausted"):
        backend.complete([Message(role="user", content="x")])
    assert waits == [] and len(server.requests) == 1


def test_the_hosted_endpoint_without_a_key_fails_before_any_request(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    waits: list[float] = []
    with pytest.raises(MissingApiKey) as raised:
        OpenAIBackend(OpenAIConfig(model="gpt-4.1"), sleep=waits.append)
    assert "OPENAI_API_KEY" in str(raised.value) and "--model offline" in str(raised.value)
    assert key_problem("https://api.openai.com/v1") is not None and waits == []
    assert key_problem("https://api.openai.com/v1", "sk-real") is None


def test_a_local_server_needs_no_key(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server.reply("hello")
    backend = OpenAIBackend(OpenAIConfig(model="local", base_url=server.base_url, timeout_s=5))
    assert key_problem(server.base_url) is None
    assert backend.complete([Message(role="user", content="x")]).text == "hello"


def test_unreachable_endpoint_is_a_clear_error():
    with FakeOpenAIServer() as s:
        url = s.base_url  # a port that was just ours and is now closed
    backend = OpenAIBackend(OpenAIConfig(model="m", base_url=url, retries=1, backoff_s=0, timeout_s=2), sleep=lambda s: None)
    with pytest.raises(BackendUnavailable, match="cannot reach the LLM endpoint"):
        backend.complete([Message(role="user", content="x")])
    assert backend.stats.retries == 1
