"""A whole episode through the real openai client and the fake server on 127.0.0.1:
a broken kernel, a malformed answer, a 429, a fixed kernel naming ids that were never
shown, a repeat that ends the loop, and the reflection that extracts an experience."""

import json

from tests.agent.conftest import seed_experiences, shown_ids

from sage.agent.answer import parse_answer, render_answer
from sage.agent.backends.base import Message
from sage.agent.backends.offline import OfflineBackend
from sage.agent.backends.openai_backend import OpenAIBackend, OpenAIConfig
from sage.agent.fake_server import FakeOpenAIServer
from sage.agent.loop import AgentConfig, synthesize


def _good_kernel(task) -> str:
    # The package's own generator writes a correct kernel for the tiny task.
    text = OfflineBackend(task).complete([Message(role="user", content="", facts={})]).text
    return parse_answer(text).source


def test_episode_over_the_fake_server(tiny_task, memory):
    ids = seed_experiences(memory, [
        dict(title="Double-buffer the copy queues", advice="BUFFER_NUM = 2 overlaps copies with compute.",
             tags=["elementwise", "activation"], hints={"buffer_num": 2}),
        dict(title="Sort with bitonic merges", advice="Sorting networks suit the vector unit for short rows.",
             tags=["sort"], hints={}),
    ])
    good = _good_kernel(tiny_task)
    broken = good.replace("Relu(", "Relu_missing(", 1)
    assert broken != good
    bad_line = next(i for i, line in enumerate(broken.splitlines(), 1) if "Relu_missing(" in line)
    waits: list[float] = []
    with FakeOpenAIServer() as server:
        server.reply(render_answer(broken, [], "first try"), prompt_tokens=1000, completion_tokens=200)
        server.reply(f"```python\n{good}```\n{{'adopted': [], 'plan': 'single quotes'}}", prompt_tokens=900,
                     completion_tokens=150)
        server.fail(429, "rate limited", retry_after="0")

        def fixed(body: dict) -> str:
            shown = shown_ids(body)
            never_shown = [i for i in ids if i not in shown] + ["E99"]
            return render_answer(good, shown + never_shown, "fixed the name")

        server.reply_with(fixed, prompt_tokens=1100, completion_tokens=210)
        server.reply_with(fixed, prompt_tokens=1200, completion_tokens=5)
        server.reply(json.dumps({"experiences": [{
            "title": "Check every vector call against the DSL card",
            "advice": "A misspelt instruction is a KernelRuntimeError at its line; use the card's names.",
            "tags": ["elementwise", "KernelRuntimeError"], "hints": {}}]}), prompt_tokens=50, completion_tokens=40)

        backend = OpenAIBackend(OpenAIConfig(model="fake-coder", base_url=server.base_url, backoff_s=0.1),
                                api_key="sk-test", sleep=waits.append)
        config = AgentConfig(iterations=3, memory_mode="atu", k=1, seed=0)
        result = synthesize(tiny_task, backend, memory, config)
        requests = server.requests

    assert [t.status for t in result.turns] == ["error", "malformed", "correct", "repeat"]
    # The second turn's prompt carries the first error: class, message, line and the quoted line.
    feedback = requests[1]["messages"][-1]["content"]
    first = result.turns[0]
    assert first.error_type in feedback and f"Kernel line {bad_line}" in feedback and "Relu_missing(" in feedback
    assert first.error_line == bad_line
    # The malformed answer was a failed attempt, explained to the model.
    assert "could not be parsed" in requests[2]["messages"][-1]["content"]
    assert result.turns[1].message.startswith("The JSON object could not be parsed")
    # After the correct kernel: its profile and a request to go faster.
    success = requests[4]["messages"][-1]["content"]
    assert "Correct on all 2 cases" in success and "busy cycles by pipe" in success
    assert f"bottleneck {result.turns[2].bottleneck}" in success and "Make it faster" in success
    # The 429 was retried once (Retry-After: 0), transparently to the loop.
    assert backend.stats.retries == 1 and waits == [0.0]
    assert len(requests) == 6  # 4 turns, one of them retried, and the reflection

    shown = shown_ids(requests[0])
    assert len(shown) == 1
    other = next(i for i in ids if i not in shown)
    assert result.adopted == shown
    assert result.rejected == sorted([other, "E99"])
    # Credit moved exactly the declared-and-shown item.
    after = {e.id: e for e in memory.experiences()}
    assert after[shown[0]].utility == result.utilities[shown[0]][1] != 0.0
    assert after[shown[0]].adopted == 1
    assert after[other].utility == 0.0 and after[other].adopted == 0
    assert set(result.utilities) == set(shown)

    # Tokens: every answer the endpoint gave, the reflection included.
    assert result.prompt_tokens == 1000 + 900 + 1100 + 1200 + 50
    assert result.completion_tokens == 200 + 150 + 210 + 5 + 40
    assert result.new_experiences and result.extracted[0].title.startswith("Check every vector call")
    assert result.status == "correct" and result.best == 2
    assert result.backend == "openai:fake-coder"
