"""Building memories through the public API only."""

from __future__ import annotations

from sage.memory import Memory, Outcome

WIN = Outcome(executed=True, correct=True, speedup=2.0)  # reward tanh(1)
CRASH = Outcome(executed=False, correct=False)  # reward -1

SOFTMAX_TAGS = ["softmax", "reduction"]

DRAFTS = [
    dict(title="Double-buffer the softmax rows", advice="Set BUFFER_NUM to 2 so the copy of row i+1 overlaps the compute of row i.",
         tags=["softmax", "reduction", "double-buffering"], hints={"buffer_num": 2}),
    dict(title="Accumulate softmax sums in fp32", advice="Cast fp16 rows to fp32 before ReduceSum or the sum loses precision.",
         tags=["softmax", "reduction", "fp16"], hints={"fp32_accumulate": True}),
    dict(title="Pad matmul tiles to 16", advice="Cube fractals are 16x16x16; pad M, N and K to multiples of 16.",
         tags=["matmul", "cube"], hints={"pad16": True}),
]


def seed_experiences(memory: Memory, drafts: list[dict] = DRAFTS, *, task: str = "seed") -> list[str]:
    """Store experiences via an episode; returns their ids in order."""
    episode = memory.start_episode(task=task, op_tags=[], model="test", mode="atu", seed=0)
    for draft in drafts:
        episode.add_experience(**draft)
    return episode.finish(CRASH).new_experiences


def run_episode(memory: Memory, *, task: str, mode: str, adopt: list[str] | None = None,
                outcome: Outcome = WIN, tags: list[str] = SOFTMAX_TAGS, query: str = "softmax rows", seed: int = 0):
    """Retrieve, adopt `adopt` (None = everything shown), finish; returns (shown ids, rule ids, report)."""
    episode = memory.start_episode(task=task, op_tags=tags, model="test", mode=mode, seed=seed)
    shown = [e.id for e in episode.retrieve(query, tags)]
    rules = [r.id for r in episode.rules]
    chosen = shown + rules if adopt is None else adopt
    if chosen:
        episode.declare_adopted(chosen, attempt=1, reason="test")
    return shown, rules, episode.finish(outcome)


# -- child processes (module-level so that the spawn start method can import them) -------------

def adopt_repeatedly(url: str, item: str, episodes: int, worker: int, start) -> None:  # type: ignore[no-untyped-def]
    """One worker process: `episodes` episodes that each retrieve and adopt `item`, then win."""
    memory = Memory(url)
    start.wait(30)  # both workers begin together, so their transactions really overlap
    for n in range(episodes):
        episode = memory.start_episode(task=f"op{worker}_{n}", op_tags=SOFTMAX_TAGS, model="test", mode="atu", seed=n)
        shown = [e.id for e in episode.retrieve("softmax rows", SOFTMAX_TAGS)]
        assert item in shown
        episode.declare_adopted([item], attempt=1)
        episode.finish(WIN)
    memory.close()


def finish_and_hang(url: str, item: str, marker: str) -> None:
    """Start finishing an episode, then hang inside its transaction (after rows were flushed) until killed."""
    import time
    from pathlib import Path

    from sqlalchemy import event
    from sqlalchemy.orm import Session

    memory = Memory(url)
    episode = memory.start_episode(task="killed", op_tags=SOFTMAX_TAGS, model="test", mode="sage", seed=0)
    episode.retrieve("softmax rows", SOFTMAX_TAGS)
    episode.declare_adopted([item], attempt=1)
    episode.record_attempt(source="kernel", status="correct", cycles=100, speedup=2.0)
    episode.add_experience(title="Written by a killed process", advice="Must never appear.", tags=["x"], hints={})

    @event.listens_for(Session, "after_flush_postexec")
    def _hang(session, _context) -> None:  # type: ignore[no-untyped-def]
        Path(marker).write_text("inside finish")
        time.sleep(120)

    episode.finish(WIN)
