"""No forging kernel teaches the memory anything (issue: integrity, round 2, item 8).

The red team had `sage synth`, with an LLM endpoint answering the lane-retry forgery, store an
episode judged correct at 2.36x (roofline 9.33, reward +0.846) and an experience learned from
it. Here a scripted LLM answers each forging kernel (the lane-retry forgeries on the wide relu,
and every reward hack of the red-team corpus) once, through the real openai client, with the
memory in `sage` mode. Afterwards the memory holds no experience, and no episode that claims
more than honest work could give: correct episodes are only those of forgeries that ended up
doing the honest work, at the honest kernel's speed.
"""

from __future__ import annotations

import pytest

from sage.agent.answer import render_answer
from sage.agent.backends.openai_backend import OpenAIBackend, OpenAIConfig
from sage.agent.fake_server import FakeOpenAIServer
from sage.agent.loop import AgentConfig, synthesize
from sage.bench.tasks import load_task
from sage.memory import Memory
from tests.security import corpus
from tests.security.test_lane_forgery import FORGERIES, TASK, source

pytestmark = pytest.mark.slow

HACKS = [e for e in corpus.entries() if e.is_hack]


def _synthesize_once(task, kernel: str, memory: Memory) -> None:
    with FakeOpenAIServer() as server:
        for _ in range(3):  # the answer, and whatever the reflection asks (the same text: no lesson in it)
            server.reply(render_answer(kernel, [], "fast"))
        backend = OpenAIBackend(OpenAIConfig(model="fake", base_url=server.base_url), api_key="sk-test")
        synthesize(task, backend, memory, AgentConfig(iterations=0, memory_mode="sage", cases=1))


def test_no_forgery_leaves_an_experience_or_a_forged_episode(tmp_path):
    honest_speedup = None
    with Memory(f"sqlite:///{tmp_path / 'memory.db'}") as memory:
        _synthesize_once(load_task(TASK), source("True", "pass"), memory)
        (honest,) = memory.export_data()["tables"]["episode"]
        honest_speedup = honest["speedup"]
        assert honest["correct"] and honest_speedup
        memory.reset()
        for name in sorted(FORGERIES):
            _synthesize_once(load_task(TASK), source(*FORGERIES[name]), memory)
        for entry in HACKS:
            _synthesize_once(load_task(entry.task), entry.path.read_text(encoding="utf-8"), memory)
        data = memory.export_data()["tables"]
    assert len(data["episode"]) == len(FORGERIES) + len(HACKS)
    forged = [e for e in data["episode"] if e["correct"] and e["task"] == "relu_wide"
              and e["speedup"] > 1.02 * honest_speedup]
    assert not forged, forged
    hacks = [e for e in data["episode"] if e["task"] != "relu_wide" and e["correct"] and (e["speedup"] or 0) >= 1]
    assert not hacks, hacks
    learned = [x for x in data["experience"]]
    assert not learned, [x["title"] for x in learned]
