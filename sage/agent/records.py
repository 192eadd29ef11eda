"""What one synthesis produced: its turns and its summary."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

TurnStatus = Literal["correct", "incorrect", "error", "malformed", "repeat", "llm_error"]


class Turn(BaseModel):
    """One answer of the backend and what became of it."""

    model_config = ConfigDict(ser_json_inf_nan="constants")

    index: int                                   # 1-based attempt number
    status: TurnStatus
    message: str | None = None                   # error / mismatch / contract problem, in words
    error_type: str | None = None
    error_line: int | None = None
    speedup: float | None = None                 # end to end (the score)
    device_speedup: float | None = None
    roofline_fraction: float | None = None
    bottleneck: str | None = None
    cycles: int | None = None                    # slowest case
    time_us: float | None = None                 # slowest case
    repeat_of: int | None = None                 # a repeat: the attempt whose kernel it repeats
    adopted: list[str] = []                      # accepted by the memory
    rejected: list[str] = []                     # declared but never shown: not credited
    trials: dict[str, float] = {}                # shown item -> effect the backend measured (without / with)
    plan: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    wall_s: float = 0.0
    source: str | None = Field(default=None, repr=False)
    evaluation: Any = Field(default=None, exclude=True, repr=False)   # the bench TaskEvaluation


class NewExperience(BaseModel):
    title: str
    tags: list[str]
    hints: dict[str, Any]


class SynthesisResult(BaseModel):
    model_config = ConfigDict(ser_json_inf_nan="constants")

    task: str
    backend: str
    memory_mode: str
    seed: int
    status: Literal["correct", "incorrect", "error", "no_kernel"]
    reason: str | None = None
    turns: list[Turn] = []
    best: int | None = None                      # index into turns of the kept kernel
    speedup: float | None = None
    roofline_fraction: float | None = None
    bottleneck: str | None = None
    cycles: int | None = None
    prompt_tokens: int = 0                       # every call: the turns and the reflection
    completion_tokens: int = 0
    calls: int = 0                               # completions received (turns and reflection requests)
    adopted: list[str] = []
    rejected: list[str] = []
    utilities: dict[str, tuple[float, float]] = {}   # credited id -> (U before, U after)
    reward: float | None = None
    new_experiences: list[str] = []
    merged_experiences: list[str] = []
    extracted: list[NewExperience] = []
    extraction_problem: str | None = None
    extraction_fallback: bool = False            # the experiences were read from a prose reflection
    stopped: str | None = None                   # why the loop stopped before its attempt budget
    promoted: dict[str, str] = {}
    demoted: list[str] = []
    episode_id: int | None = None
    wall_s: float = 0.0

    @property
    def best_turn(self) -> Turn | None:
        return self.turns[self.best] if self.best is not None else None

    @property
    def best_source(self) -> str | None:
        turn = self.best_turn
        return turn.source if turn is not None else None
