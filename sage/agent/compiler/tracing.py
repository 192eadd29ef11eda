"""Tracing one case of the reference, and what the traces say about the reference itself.

A case the plain reference raises on (its own inputs out of range) is not the compiler's to
judge; a reference whose operations change with its input values (Python control flow on
.tolist()/.item()), or that computes a tensor on the host outside torch (numpy) from its
inputs, or that draws random tensors on every call, has no static kernel program: each is
refused here, saying which.
"""

from __future__ import annotations

from typing import Any

import torch

from sage.agent.compiler.build import Unsupported
from sage.bench.evaluate import ReferenceFailure, reference_outputs
from sage.kernels import trace_graph


def traced(model: torch.nn.Module, case: list) -> Any:
    """The case's decomposed trace, or None when the plain reference raises on these inputs
    too (e.g. index values out of range of the tensor they index): a failure of the task's
    own code is a case the evaluation skips (`reference_error`), not a compiler bug. A trace
    failure the plain reference does not share is one, and propagates."""
    try:
        return trace_graph(model, [a.clone() if isinstance(a, torch.Tensor) else a for a in case], decompose=True)
    except Unsupported:
        raise
    except Exception:
        if reference_failure(model, case) is None:
            raise
        return None


def reference_failure(model: torch.nn.Module, case: list) -> str | None:
    """What the plain reference raises on `case` (as the evaluation reports it), or None."""
    try:
        reference_outputs(model, case)
    except ReferenceFailure as exc:
        return str(exc)
    return None


def check_static(model: torch.nn.Module, graph: Any, case: list, again: list | None) -> None:
    """Unsupported when `graph` (the trace of `case`) is not the same program on other inputs:
    `again` is the case drawn under another seed, and a graph that captured tensors is also
    traced once more with other floating-point values; its captured contents must not change."""
    seeded = next((n.call for n in graph.nodes if _draws_from_the_generator(n.call)), None)
    if seeded is not None or (graph.captured and _captured(graph) != _captured(traced(model, case) or graph)):
        what = f"aten.{seeded.name}" if seeded is not None else "a captured constant"
        raise Unsupported(f"the reference draws new random tensors on every call ({what}; torch.randn, or a "
                          "module built inside forward, as a fresh nn.Conv2d is, where sage could not pass the "
                          "draws as inputs): no kernel reproduces the next draw")
    twin = traced(model, again) if again is not None else None
    if twin is not None and _fingerprint(graph) != _fingerprint(twin):
        raise Unsupported("the reference's operations depend on tensor values it reads on the host "
                          "(.tolist()/.item() driving Python control flow); no static kernel program matches it")
    # The redrawn case changes integer inputs too (a cumsum of integer sizes made with numpy);
    # the perturbed one changes floats where the redraw may not (a task with fixed values).
    if graph.captured and any(_captured(graph) != _captured(other or graph)
                              for other in (twin, traced(model, _perturbed(case)))):
        raise Unsupported("the reference computes a tensor on the host outside torch (numpy, or Python on "
                          "tensor values) from its inputs: the trace holds it as a captured constant, which a "
                          "kernel cannot compute")


def _draws_from_the_generator(call) -> bool:
    """The call is an op torch tags `nondeterministic_seeded` (uniform_, randn, bernoulli, ...)."""
    packet = getattr(torch.ops.aten, call.name, None)
    op = getattr(packet, call.overload or "default", None) if packet is not None else None
    return op is not None and torch.Tag.nondeterministic_seeded in op.tags


def _fingerprint(graph) -> list:
    return [(n.call.name, n.call.overload, repr(n.call.scalars), [tuple(t.shape) for t in n.call.inputs])
            for n in graph.nodes]


def _perturbed(case: list) -> list:
    """The case with other values in its floating-point tensors (a task may draw the same
    values under any seed). Integer tensors are kept: they may be indices."""
    gen = torch.Generator().manual_seed(20261202)
    return [torch.randn(a.shape, generator=gen).to(a.dtype) if isinstance(a, torch.Tensor) and a.is_floating_point()
            else a for a in case]


def _captured(graph) -> list:
    """The contents of the tensors the forward captured, in the order it met them."""
    return [graph.captured[v] for v in sorted(graph.captured)]
