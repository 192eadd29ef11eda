"""Run budgets and the prompt bound stop an episode cleanly; ids never shown are rejected; a
repeat is fed back and the attempt budget decides; a reflection in prose still yields
experiences. All through the fake server on 127.0.0.1."""

from __future__ import annotations

import pytest

from sage.agent.answer import render_answer
from sage.agent.backends.base import Message
from sage.agent.backends.openai_backend import OpenAIBackend, OpenAIConfig
from sage.agent.budget import BudgetExhausted, Prices, RunBudget, TokenEstimator
from sage.agent.conversation import Conversation, PromptTooLarge
from sage.agent.fake_server import FakeOpenAIServer, counted_tokens
from sage.agent.loop import AgentConfig, synthesize
from sage.agent.records import Turn
from tests.agent.test_loop_openai import _good_kernel


def _backend(server) -> OpenAIBackend:
    return OpenAIBackend(OpenAIConfig(model="fake", base_url=server.base_url), api_key="sk-test")


def _episodes(memory) -> int:
    from sqlalchemy import text

    with memory.engine.connect() as conn:
        return conn.execute(text("select count(*) from episode")).scalar_one()


def test_the_token_budget_stops_before_the_call_it_cannot_pay(tiny_task, memory):
    good = _good_kernel(tiny_task)
    broken = good.replace("Relu(", "Relu_missing(", 1)
    with FakeOpenAIServer() as server:
        # The endpoint counts 50,000 prompt tokens: the next prompt, estimated at the same ratio, cannot fit.
        server.reply(render_answer(broken, [], "first try"), prompt_tokens=50_000, completion_tokens=100)
        server.reply('{"experiences": []}', prompt_tokens=10, completion_tokens=5)
        budget = RunBudget(max_tokens=60_000)
        result = synthesize(tiny_task, _backend(server), memory,
                            AgentConfig(iterations=3, memory_mode="atu", max_completion_tokens=300), budget=budget)
        requests = len(server.requests)
    assert [t.status for t in result.turns] == ["error"]
    assert result.stopped.startswith("stopped before attempt 2: token budget: 50100 of 60000 tokens spent")
    assert requests == 1 and budget.tokens == 50_100 <= 60_000
    assert result.episode_id is not None     # what was judged is written: the next run starts from it
    assert "token budget" in result.extraction_problem


def test_a_budget_that_cannot_pay_the_first_call_writes_nothing(tiny_task, memory):
    with FakeOpenAIServer() as server:
        with pytest.raises(BudgetExhausted, match="token budget: 0 of 100 tokens"):
            synthesize(tiny_task, _backend(server), memory, AgentConfig(iterations=1, memory_mode="atu"),
                       budget=RunBudget(max_tokens=100))
        assert server.requests == []
    assert _episodes(memory) == 0


def test_the_cost_budget_prices_prompt_and_completion_apart():
    budget = RunBudget(max_cost=0.10, prices=Prices.parse("3,15"))
    budget.charge(20_000, 1_000)                      # $0.06 + $0.015
    assert budget.cost == pytest.approx(0.075)
    budget.check(5_000, 500)                          # + $0.0225 = $0.0975: fits
    with pytest.raises(BudgetExhausted, match=r"cost budget: \$0.0750 of \$0.1000"):
        budget.check(5_000, 1_000)                    # + $0.030 = $0.105
    with pytest.raises(ValueError, match="prices"):
        RunBudget(max_cost=1.0)
    with pytest.raises(ValueError, match="PROMPT,COMPLETION"):
        Prices.parse("3")


def test_the_prompt_bound_drops_the_oldest_summaries_first():
    system, task = Message(role="system", content="s" * 3000), Message(role="user", content="t" * 900)
    turns = [Turn(index=i, status="error", error_type="BoundsError", error_line=i, message="x" * 150,
                  plan=f"plan {i}") for i in range(1, 7)]
    feedback = Message(role="user", content="f" * 600, facts={"feedback": {"kind": "error"}})
    estimator = TokenEstimator()                      # 3 characters a token
    unbounded = Conversation(system, task, estimator=estimator).after(turns, "a" * 1200, feedback)
    assert all(f"- attempt {i}:" in unbounded[-1].content for i in range(1, 6))
    bounded = Conversation(system, task, max_prompt_tokens=2100, estimator=estimator).after(turns, "a" * 1200,
                                                                                          feedback)
    text = bounded[-1].content
    assert sum(len(m.content) for m in bounded) <= 2100 * 3
    assert "- attempt 5:" in text and "- attempt 1:" not in text and "oldest attempts left out" in text
    assert bounded[-1].facts == feedback.facts        # the offline synthesizer still reads the feedback
    with pytest.raises(PromptTooLarge, match="over --max-prompt-tokens 1000"):
        Conversation(system, task, max_prompt_tokens=1000, estimator=estimator).first()


def test_the_estimate_follows_the_endpoint_but_never_past_4_chars_a_token():
    est = TokenEstimator()
    assert est.estimate(3000) == 1000
    est.observe(3000, 1500)
    assert est.estimate(3000) == 1500
    est.observe(3000, 100)                            # an endpoint that under-reports
    assert est.estimate(3000) == 750


def test_example_ids_are_rejected_not_credited(tiny_task, memory):
    good = _good_kernel(tiny_task)
    with FakeOpenAIServer() as server:
        server.reply(render_answer(good, ["E12", "R3"], "copied the contract's example"))
        server.reply('{"experiences": []}')
        result = synthesize(tiny_task, _backend(server), memory, AgentConfig(iterations=0, memory_mode="sage"))
        contract = server.requests[0]["messages"][0]["content"]
        task_prompt = server.requests[0]["messages"][1]["content"]
    assert "E12" not in contract and "R3" not in contract
    assert '"adopted" must be []' in task_prompt
    assert result.status == "correct"
    assert result.adopted == [] and result.rejected == ["E12", "R3"] and result.utilities == {}


def test_a_repeat_is_fed_back_and_the_attempt_budget_decides(tiny_task):
    good = _good_kernel(tiny_task)
    broken = good.replace("Relu(", "Relu_missing(", 1)
    with FakeOpenAIServer() as server:
        server.reply(render_answer(broken, [], "first try"))
        server.reply(render_answer(broken, [], "the same again"))
        server.reply(render_answer(good, [], "fixed the call"))
        result = synthesize(tiny_task, _backend(server), None, AgentConfig(iterations=2, memory_mode="none"))
        third = server.requests[2]["messages"][-1]["content"]
    assert [t.status for t in result.turns] == ["error", "repeat", "correct"]
    assert "Attempt 2 is the same kernel as attempt 1" in third and "not evaluated again" in third
    assert "KernelRuntimeError" in third          # what attempt 1 got, restated
    assert result.status == "correct"


PROSE = """Lessons from this episode:

- Spell every vector instruction exactly as the DSL card lists it; a misspelt call fails at run time.
- Relu over a flattened tensor needs no row tiling at all, so one long copy per tile is the fastest layout.
"""


def test_a_prose_reflection_falls_back_to_reading_the_prose(tiny_task, memory):
    good = _good_kernel(tiny_task)
    with FakeOpenAIServer() as server:
        server.reply(render_answer(good, [], "relu"), prompt_tokens=None, completion_tokens=None)
        server.reply(PROSE, prompt_tokens=None, completion_tokens=None)
        server.reply("Sorry, here it is again in words. " + PROSE, prompt_tokens=None, completion_tokens=None)
        result = synthesize(tiny_task, _backend(server), memory, AgentConfig(iterations=0, memory_mode="sage"))
        requests = list(server.requests)
    assert len(requests) == 3 and result.calls == 3
    assert result.prompt_tokens == sum(counted_tokens(b) for b in requests)
    assert result.extraction_fallback and result.extraction_problem is None
    assert [e.title for e in result.extracted][:2] == [
        "Spell every vector instruction exactly as the DSL card lists it",
        # over 80 characters: cut to whole words
        "Relu over a flattened tensor needs no row tiling at all, so one long copy per…"]
    assert len(result.extracted) == 2 and len(result.new_experiences) >= 1


def _charge_many(ledger: str, n: int) -> None:
    from pathlib import Path

    from sage.agent.budget import LedgerBudget

    budget = LedgerBudget(max_tokens=10**9, ledger=Path(ledger))
    for _ in range(n):
        budget.charge(3, 2)


def test_a_ledger_budget_adds_up_the_charges_of_several_processes(tmp_path):
    import multiprocessing

    import pytest

    from sage.agent.budget import BudgetExhausted, LedgerBudget

    ledger = tmp_path / "budget.json"
    procs = [multiprocessing.get_context("fork").Process(target=_charge_many, args=(str(ledger), 200))
             for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    budget = LedgerBudget(max_tokens=3000 + 5 + 10, ledger=ledger)
    budget.check(5, 10)                                  # 3 x 200 x 5 = 3000 spent: exactly fits
    assert (budget.prompt_tokens, budget.completion_tokens, budget.calls) == (1800, 1200, 600)
    with pytest.raises(BudgetExhausted, match="3000 of 3015 tokens spent in 600 calls"):
        budget.check(6, 10)
    budget.reset()
    budget.check(6, 10)
