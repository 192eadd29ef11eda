"""Shared fixtures: a tiny task that evaluates in a second, memories seeded with experiences."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

TINY_RELU = '''
import torch

DESCRIPTION = "ReLU of a small matrix (a quick test task)."
TAGS = ["elementwise", "activation"]


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_input_groups():
    return [[torch.randn(512, 1024)], [torch.randn(64, 301).half()]]


def get_inputs():
    return get_input_groups()[0]


def get_init_inputs():
    return []
'''


@pytest.fixture
def tiny_task(tmp_path: Path):
    from sage.bench.tasks import load_task

    path = tmp_path / "tiny_relu.py"
    path.write_text(TINY_RELU)
    return load_task(path)


@pytest.fixture
def memory(tmp_path: Path):
    from sage.memory import Memory

    with Memory(f"sqlite:///{tmp_path / 'memory.db'}") as m:
        yield m


def seed_experiences(memory, experiences: list[dict]) -> list[str]:
    """Stores experiences through an episode (the memory's only write path); returns their ids."""
    from sage.memory import Outcome

    episode = memory.start_episode(task="seed", op_tags=[], model="test", mode="sage", seed=0)
    for e in experiences:
        episode.add_experience(**e)
    return episode.finish(Outcome(executed=False, correct=False)).new_experiences


def shown_ids(request_body: dict) -> list[str]:
    """The experience ids the task prompt of a chat request showed."""
    user = next(m["content"] for m in request_body["messages"] if m["role"] == "user")
    return re.findall(r"^- (E\d+) ", user, flags=re.MULTILINE)
