"""An answer cut off at the completion limit (finish_reason "length") is asked for the rest and
reassembled before it is judged; one still cut off after the continuations fails its attempt
with a one-line reason. Through the real openai client and the fake server on 127.0.0.1."""

from __future__ import annotations

from sage.agent.answer import render_answer
from sage.agent.backends.openai_backend import OpenAIBackend, OpenAIConfig
from sage.agent.budget import RunBudget
from sage.agent.continuation import CONTINUE, MAX_CONTINUATIONS
from sage.agent.fake_server import FakeOpenAIServer
from sage.agent.loop import AgentConfig, synthesize
from tests.agent.test_loop_openai import _good_kernel


def _backend(server) -> OpenAIBackend:
    return OpenAIBackend(OpenAIConfig(model="fake", base_url=server.base_url, max_tokens=500), api_key="sk-test")


def test_a_kernel_split_over_two_replies_is_reassembled_and_evaluated(tiny_task, memory):
    answer = render_answer(_good_kernel(tiny_task), [], "one relu pass")
    with FakeOpenAIServer() as server:
        first, rest = server.reply_in_parts(answer, 2, prompt_tokens=1000, completion_tokens=500)
        budget = RunBudget(max_tokens=10**6)
        result = synthesize(tiny_task, _backend(server), memory,
                            AgentConfig(iterations=0, memory_mode="none", max_completion_tokens=500), budget=budget)
        requests = server.requests
    assert first + rest == answer and "```" in first and first.count("```") < 2   # the fence is cut apart
    assert [t.status for t in result.turns] == ["correct"]
    assert result.turns[0].source.strip() == _good_kernel(tiny_task).strip()
    # the continuation sends the answer so far back and asks for the rest
    assert len(requests) == 2
    assert requests[1]["messages"][:-2] == requests[0]["messages"]
    assert requests[1]["messages"][-2] == {"role": "assistant", "content": first}
    assert requests[1]["messages"][-1] == {"role": "user", "content": CONTINUE}
    # both calls are counted: in the turn, the result and the run budget
    assert (result.turns[0].prompt_tokens, result.turns[0].completion_tokens) == (2000, 1000)
    assert (result.calls, budget.calls, budget.tokens) == (2, 2, 3000)


def test_an_endless_truncation_fails_the_attempt_with_a_one_line_reason(tiny_task, memory):
    answer = render_answer(_good_kernel(tiny_task), [], "one relu pass")
    with FakeOpenAIServer() as server:
        # more pieces than the continuations can fetch: the answer never ends
        server.reply_in_parts(answer, MAX_CONTINUATIONS + 2, prompt_tokens=100, completion_tokens=500)
        result = synthesize(tiny_task, _backend(server), memory,
                            AgentConfig(iterations=0, memory_mode="none", max_completion_tokens=500))
        asked = len(server.requests)
    assert asked == 1 + MAX_CONTINUATIONS
    reason = f"the answer was cut off at {500 * (1 + MAX_CONTINUATIONS)} tokens after {MAX_CONTINUATIONS} " \
             "continuations; raise --answer-tokens"
    assert [(t.status, t.message) for t in result.turns] == [("malformed", reason)]
    assert result.status == "error" and result.reason == f"attempt 1: {reason}" and "\n" not in result.reason


class _FirstCallFree(RunBudget):
    """A run budget whose first check passes: the call it lets through is cut off, and the
    continuation is what the budget cannot pay for."""

    checks: int = 0

    def check(self, prompt_estimate: int, completion_limit: int) -> None:
        self.checks += 1
        if self.checks > 1:
            super().check(prompt_estimate, completion_limit)


def test_a_budget_that_cannot_pay_a_continuation_says_so(tiny_task, memory):
    answer = render_answer(_good_kernel(tiny_task), [], "one relu pass")
    with FakeOpenAIServer() as server:
        server.reply_in_parts(answer, 2, prompt_tokens=None, completion_tokens=500)
        budget = _FirstCallFree(max_tokens=1)   # the first call fits; no continuation does
        result = synthesize(tiny_task, _backend(server), memory,
                            AgentConfig(iterations=0, memory_mode="none", max_completion_tokens=500), budget=budget)
        assert len(server.requests) == 1
    (turn,) = result.turns
    assert turn.status == "malformed"
    assert turn.message.startswith("the answer was cut off at 500 tokens after 0 continuations; raise --answer-tokens "
                                   "(no further continuation: token budget:")
