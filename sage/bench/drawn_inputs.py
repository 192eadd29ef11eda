"""References that draw random tensors inside `forward` (a module built there, as a fresh
`nn.Conv2d(...)(x)` is, or a `torch.randn` of noise): the draws become inputs of the case.

MultiKernelBench's harness seeds torch once before it builds the reference model and once
before it builds the candidate (`set_seed(seed_num)` in `utils/correctness.py` at commit
460a972, https://github.com/wzzll123/MultiKernelBench/blob/460a972/utils/correctness.py),
not before each call: a module built inside `forward` draws its weights from wherever the
generator stands, so the reference and a candidate meet different weights, and no kernel can
match the reference except by drawing the same numbers in the same order. sage makes such a
task well-posed instead. Each case's forward runs once under a seed of its own (the task's
seed and the case's index), its draws are recorded in order, and they are handed to the
forward as one extra trailing argument, a list of tensors: the reference replays them in
place of drawing (`DrawsAsInputs`), and a kernel reads them as it reads any input.

A draw is the result of an op torch tags `nondeterministic_seeded` whose result is all
drawn (`PURE_DRAWS`): its values come from the generator and its shape from its arguments.
Dropout in training on the CPU draws its mask so (`bernoulli_` on an empty tensor), and the
mask becomes an input like a weight. Ops whose draw reads their input's values (rrelu's
noise, poisson of rates, multinomial of probabilities) are not replayed, and the compiler
refuses a trace that still draws (sage/agent/compiler/tracing.py).
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode

# Ops whose whole result is drawn from torch's generator (each carries torch's
# `nondeterministic_seeded` tag, tests/bench/test_drawn_inputs.py checks it): the in-place
# fills that nn.init and Tensor.uniform_/normal_ use, and the factory functions.
PURE_DRAWS = frozenset({
    "uniform_", "normal_", "bernoulli_", "exponential_", "cauchy_", "log_normal_", "geometric_",
    "uniform", "normal", "rand", "rand_like", "randn", "randn_like", "randint", "randint_like", "randperm",
})


class DrawMismatch(RuntimeError):
    """The forward drew a tensor other than the one the case holds for that draw."""


def _is_draw(func) -> bool:
    return func.overloadpacket.__name__ in PURE_DRAWS and torch.Tag.nondeterministic_seeded in func.tags


class _Recorder(TorchDispatchMode):
    """Runs the forward as it is and keeps a copy of every draw, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.draws: list[torch.Tensor] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if _is_draw(func):
            self.draws.append(out.detach().clone())
        return out


class _Replay(TorchDispatchMode):
    """Answers each draw with the case's tensor for it. An in-place fill (nn.init on a fresh
    weight) makes its target that tensor (`.data` rebinds the storage, no op dispatched), so
    a trace sees the weight as the input itself, with no copy to time or compile."""

    def __init__(self, draws: list[torch.Tensor]) -> None:
        super().__init__()
        self.draws = list(draws)
        self.used = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not _is_draw(func):
            return func(*args, **(kwargs or {}))
        if self.used >= len(self.draws):
            raise DrawMismatch(f"the forward draws more tensors than the case holds ({len(self.draws)})")
        draw = self.draws[self.used]
        self.used += 1
        inplace = func.overloadpacket.__name__.endswith("_")
        shaped = args[0] if inplace else func(*args, **(kwargs or {}))
        if tuple(shaped.shape) != tuple(draw.shape) or shaped.dtype != draw.dtype:
            raise DrawMismatch(f"draw {self.used - 1} of the forward is {shaped.dtype}{list(shaped.shape)}, "
                               f"the case holds {draw.dtype}{list(draw.shape)}")
        if not inplace:
            return draw
        with torch._C._DisableTorchDispatch():
            shaped.data = draw
        return shaped


class DrawsAsInputs(torch.nn.Module):
    """The task's model, its forward taking the case's draws as one more trailing argument
    (a list of tensors) and replaying them instead of drawing."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, *args: Any) -> Any:
        *plain, draws = args
        replay = _Replay(list(draws))
        with replay:
            out = self.model(*plain)
        if replay.used != len(replay.draws):
            raise DrawMismatch(f"the forward drew {replay.used} tensors, the case holds {len(replay.draws)}")
        return out


def record_draws(forward: Callable[..., Any], case: list) -> list[torch.Tensor]:
    """The tensors `forward(*case)` draws, in order (the caller seeds the generator)."""
    recorder = _Recorder()
    with torch.no_grad(), recorder:
        forward(*case)
    return recorder.draws


def case_seed(task_seed: int, index: int) -> int:
    """The seed of case `index`'s draws: distinct per case, the same on every machine."""
    return (task_seed * 1_000_003 + index) % 2**63


DESCRIPTION = ("sage passes the tensors this forward draws at random (a module built inside forward, or "
               "torch.rand*) as one extra trailing argument: a list of tensors in the order the forward "
               "draws them (nn.Conv2d: weight, then bias). Use them instead of drawing.")


def probe_draws(model: torch.nn.Module, case: list) -> list[torch.Tensor]:
    """The draws of `model(*case)` as far as the forward gets: a probe on a sized case (its
    large tensors on the meta device), where a module built inside forward holds CPU weights
    and the call after the draw may refuse the mix of devices. What it drew before that is
    what the probe wants; the failure itself belongs to the evaluation, which meets it again
    on the real inputs."""
    recorder = _Recorder()
    try:
        with torch.no_grad(), recorder:
            model(*case)
    except Exception:  # noqa: BLE001 - the task's own failure (a .cuda() call, a meta kernel torch
        # lacks): the evaluation meets it on the real inputs and reports it; the draws made
        # before it are the probe's answer
        return recorder.draws
    return recorder.draws


def on_meta(case: list) -> list:
    """The case with each tensor (and each tensor of a list) an empty one on the meta device."""
    def meta(a: Any) -> Any:
        if isinstance(a, torch.Tensor):
            return torch.empty_like(a, device="meta")
        if isinstance(a, (list, tuple)) and any(isinstance(x, torch.Tensor) for x in a):
            return type(a)(meta(x) for x in a)
        return a
    return [meta(a) for a in case]


def cases_with_draws(model: torch.nn.Module, cases: list[list], task_seed: int,
                     seeded: Callable[[int], Any]) -> list[list]:
    """Each case with its draws appended as one list: the forward run once per case under the
    case's own seed (`seeded(seed)`, the task's generator context). A case on the meta device
    (sized, or over the input budget) gets its draws' shapes on the meta device."""
    out = []
    for index, case in enumerate(cases):
        meta = any(isinstance(a, torch.Tensor) and a.is_meta for a in case)
        with seeded(case_seed(task_seed, index)):
            if meta:
                draws = [torch.empty_like(d, device="meta") for d in probe_draws(model, case)]
            else:
                draws = record_draws(model, [a.clone() if isinstance(a, torch.Tensor) else a for a in case])
        out.append([*case, draws])
    return out
