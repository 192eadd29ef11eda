"""The attention group's lowering: the fused node of attention.py as the library's
flash-attention kernel (sage/kernels/library/flash_attention.py), one MIX launch (two with a
data mask: the mask's bits pre-pass, then the attention)."""

from __future__ import annotations

from sage.agent.compiler.build import Unsupported
from sage.agent.compiler.emit import Launch
from sage.agent.compiler.fusion import Group
from sage.agent.compiler.ir import Program
from sage.agent.compiler.schedule import Schedule
from sage.kernels import Target


def attention_launch(group: Group, prog: Program, name: str, sched: Schedule, target: Target) -> Launch | None:
    from sage.kernels.library.flash_attention import AttnSpec, FlashKnobs, flash_attention_source

    node = group.nodes[0]
    q, k, v = node.ins[0], node.ins[1], node.ins[2]
    mask = node.ins[3] if len(node.ins) > 3 else None
    assert q is not None and k is not None and v is not None
    out = node.outs[0]
    b, h, sq, d = q.shape
    if 0 in (b, h, sq, d, k.shape[2]):
        return None
    try:
        spec = AttnSpec(name=name, batch=b, heads=h, kv_heads=k.shape[1], sq=sq, skv=k.shape[2], d=d,
                        dtype=q.dtype, scale=float(node.scalars[0]), mask="data" if mask is not None else "none",
                        mask_batch=node.kwargs.get("mask_batch", 1), mask_heads=node.kwargs.get("mask_heads", 1))
        source = flash_attention_source(spec, FlashKnobs(block_dim=sched.block_dim), target=target,
                                        with_forward=False)
    except ValueError as exc:
        raise Unsupported(f"{node.describe()}: {exc}") from None
    args = [prog.buffers[r.buf].name for r in (q, k, v) + ((mask,) if mask is not None else ())]
    args.append(prog.buffers[out.buf].name)
    label = f"flash attention [{b}, {h}/{k.shape[1]}, {sq}x{k.shape[2]}, {d}] {spec.mask} mask"
    return Launch(source, f"{name}_launch({', '.join(args)})", label, args)
