"""The scripted replay of a realistic model session (tests/agent/replay_swish.py) through the
real `openai` client and the fake server on 127.0.0.1: each prompt carries what a model
needs and stays within its bound; every call's tokens are counted."""

from __future__ import annotations

import math
import re

import pytest
import torch

from sage.agent.backends.openai_backend import OpenAIBackend, OpenAIConfig
from sage.agent.fake_server import FakeOpenAIServer, counted_tokens
from sage.agent.loop import AgentConfig, synthesize
from sage.bench.correctness import RULE, TOLERANCES
from sage.bench.tasks import load_task, resolve_op
from tests.agent import replay_swish as session
from tests.agent.conftest import seed_experiences

MAX_PROMPT_TOKENS = 16_000


def _chars(body: dict) -> int:
    return sum(len(m["content"]) for m in body["messages"])


@pytest.fixture(scope="module")
def replay(tmp_path_factory):
    from sage.memory import Memory

    url = f"sqlite:///{tmp_path_factory.mktemp('replay') / 'memory.db'}"
    task = load_task(resolve_op(session.TASK))
    with Memory(url) as memory:
        ids = seed_experiences(memory, session.SEEDED)
        with FakeOpenAIServer() as server:
            session.script_server(server)
            backend = OpenAIBackend(OpenAIConfig(model="replay", base_url=server.base_url), api_key="sk-test")
            config = AgentConfig(iterations=4, memory_mode="sage", k=2, cases=session.CASES,
                                 max_prompt_tokens=MAX_PROMPT_TOKENS)
            result = synthesize(task, backend, memory, config)
            requests = list(server.requests)
    return task, result, requests, ids


def test_the_session_runs_wrong_then_fixed_then_faster(replay):
    _, result, requests, _ = replay
    assert [t.status for t in result.turns] == ["incorrect", "correct", "correct", "error", "repeat"]
    assert result.turns[4].repeat_of == 3
    assert result.best == 2 and result.turns[2].speedup > result.turns[1].speedup
    assert result.turns[3].error_type == "CapacityError"
    assert len(requests) == 7      # 5 turns (the repeat did not end the episode early) and 2 reflection requests


def test_every_prompt_states_the_rule_and_the_tolerances(replay):
    _, _, requests, _ = replay
    for body in requests:
        system = body["messages"][0]["content"]
        assert RULE in system
        for dtype, tol in TOLERANCES.items():
            assert f"{dtype} {tol:g}" in system


def test_the_task_prompt_describes_the_reference(replay):
    _, _, requests, _ = replay
    task = requests[0]["messages"][1]["content"]
    # x * -beta, exp, + 1, div: four eager kernels; case 0 reads and writes 2048 x 1024 float32 once.
    assert "case 0 (float32[2048, 1024], 1.0): torch_npu runs an eager chain of 4 kernel launches" in task
    assert f"Essential traffic {2 * 2048 * 1024 * 4 / 1e6:.2f} MB" in task
    # fp16 [4096, 301]: 2 x 4096 x 301 x 2 bytes.
    assert f"Essential traffic {2 * 4096 * 301 * 2 / 1e6:.2f} MB" in task


def test_the_wrong_result_names_positions_with_kernel_eager_and_truth(replay):
    task, _, requests, _ = replay
    feedback = requests[1]["messages"][-1]["content"]
    assert "First failing case 1: forward(float16[4096, 301], 1.702)" in feedback
    first = re.search(r"\[0, (\d+)\]: kernel=(\S+), eager=(\S+), truth=(\S+) ", feedback)
    assert first is not None
    col, kernel, truth = int(first.group(1)), float(first.group(2).rstrip(",")), float(first.group(4))
    # The same inputs again (same seed), and the bug by hand: beta read as 1.
    x = task.cases()[1][0][0, col].double()
    assert truth == pytest.approx(float(x * torch.sigmoid(1.702 * x)), rel=1e-5)
    assert kernel == pytest.approx(float(x * torch.sigmoid(x)), rel=2e-3)
    assert RULE not in feedback          # the rule is in the system message, once


def test_the_speed_feedback_carries_bytes_times_and_the_reference(replay):
    _, result, requests, _ = replay
    feedback = requests[2]["messages"][-1]["content"]
    case0 = 2048 * 1024 * 4 / 1e6
    assert f"Bytes moved by path: GM->UB {case0:.2f} MB, UB->GM {case0:.2f} MB" in feedback
    assert f"against {2 * case0:.2f} MB essential (1.0x the essential bytes)" in feedback
    assert re.search(r"your kernel [\d.]+ us end to end, [\d.]+ us on the device", feedback)
    assert "The reference: case 0" in feedback and "eager chain of 4 kernel launches" in feedback
    assert "Pipe profile:" in feedback and f"bottleneck {result.turns[1].bottleneck}" in feedback
    assert "MTE2" in feedback and "busy cycles by pipe" in feedback


def test_prompts_stay_bounded_and_never_resend_earlier_kernels(replay):
    _, _, requests, _ = replay
    turns = requests[:5]
    for n, body in enumerate(turns, 1):
        # The loop's estimate starts at 3 characters a token, below any real tokenizer's ratio for this text.
        assert math.ceil(_chars(body) / 3) <= MAX_PROMPT_TOKENS
        kernels = sum(m["content"].count("class KernelSwish") for m in body["messages"])
        assert kernels == (0 if n == 1 else 1)
    turn3 = "".join(m["content"] for m in turns[2]["messages"])
    assert "Muls(t, xf, -1.0, na)" not in turn3          # attempt 1's kernel is summarised, not re-sent
    assert "- attempt 1: wrong result: case 1 (float16[4096, 301], 1.702): output 0:" in turn3
    turn5 = turns[4]["messages"][-1]["content"]
    assert all(f"- attempt {i}:" in turn5 for i in (1, 2, 3))
    assert "CapacityError" in turn5 and "Kernel line" in turn5
    # Five attempts in, the prompt is no longer than turn 1's plus two answers and a page of feedback.
    assert _chars(turns[4]) < _chars(turns[0]) + 2 * len(session.FASTER) + 4000


def test_every_call_is_counted(replay):
    _, result, requests, _ = replay
    assert result.calls == 7
    assert result.prompt_tokens == sum(counted_tokens(body) for body in requests)
    assert result.completion_tokens > 0


def test_the_prose_reflection_is_asked_again_and_stored(replay):
    _, result, requests, _ = replay
    assert "Reply with the JSON object only" in requests[6]["messages"][-1]["content"]
    assert requests[6]["messages"][-2]["content"] == session.REFLECTION_PROSE
    assert [e.title for e in result.extracted] == ["Pass every scalar argument into the kernel",
                                                   "Double-buffer elementwise kernels on every vector core"]
    assert not result.extraction_fallback and result.extraction_problem is None


def test_only_the_shown_id_is_adopted_and_credited(replay):
    _, result, requests, ids = replay
    shown = re.findall(r"^- (E\d+) ", requests[0]["messages"][1]["content"], flags=re.MULTILINE)
    assert result.adopted == shown[:1] and result.rejected == []
    before, after = result.utilities[shown[0]]
    assert after > before          # its attempt was the best kernel


def test_docs_agent_md_shows_the_current_prompts(replay):
    """docs/agent.md is generated by benchmarks/agent_prompts.py; after a prompt change it must be regenerated."""
    from pathlib import Path

    from sage.agent.prompt import system_message

    doc = (Path(__file__).resolve().parents[2] / "docs" / "agent.md").read_text(encoding="utf-8")
    assert doc.count(system_message("ascend910b2").content) == 2      # in the turn-1 and the turn-3 prompt
    # The task message too (memory block included): this session's is the generated one's.
    _, _, requests, _ = replay
    assert doc.count(requests[0]["messages"][1]["content"]) == 2
