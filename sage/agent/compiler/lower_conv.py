"""Lowering of the convolutions the registry keeps whole (aten.convolution with the
`conv` primitive kind) to one library kernel each.

The decomposition (`sage/kernels/decompose.py`) keeps a convolution as one node only where a
direct kernel exists (`direct_conv`); the others are recorded as padding, an im2col copy and
a matrix product. Those are the depthwise 2-D convolution, on the vector cores in one
launch (`library/conv_depthwise.py`), and the plain (groups = 1) 1- to 3-D convolution as an
implicit GEMM in one mix launch (`library/conv_gemm.py`): no pad fill, pad copy or im2col
buffer launches before the product.
"""

from __future__ import annotations

from sage.agent.compiler.generic.lift import lift
from sage.agent.compiler.build import Unsupported
from sage.agent.compiler.emit import Launch, library_launch
from sage.agent.compiler.fusion import Group
from sage.agent.compiler.ir import Program, contiguous_strides
from sage.agent.compiler.schedule import Schedule
from sage.kernels import Target
from sage.kernels.decompose import conv_params


def conv_launch(group: Group, prog: Program, name: str, sched: Schedule, target: Target) -> Launch | None:
    from sage.kernels.library.conv_depthwise import DepthwiseSpec, depthwise_args, depthwise_source

    node = group.nodes[0]
    tensors = [r for r in node.ins if r is not None]
    if len(tensors) != len(node.ins) or len(tensors) not in (2, 3):
        raise Unsupported(f"{node.describe()}: a constant operand")
    x, w, out = tensors[0], tensors[1], node.outs[0]
    bias = tensors[2] if len(tensors) == 3 else None
    p = conv_params(node.call.scalars, x.shape, w.shape)
    if p is None or p.kind == "other":
        raise Unsupported(f"{node.describe()}: grouped and transposed convolutions are decomposed, not lowered whole")
    if 0 in out.shape:
        return None
    for ref, what in ((x, "input"), (w, "weight"), (bias, "bias"), (out, "output")):
        if ref is not None and (not ref.layout.is_dense() or ref.layout.offset
                                or tuple(ref.layout.strides) != contiguous_strides(ref.shape)):
            raise Unsupported(f"{node.describe()}: the {what} is not a dense tensor of its own")
    if len({r.dtype for r in (x, w, bias, out) if r is not None}) != 1:
        raise Unsupported(f"{node.describe()}: operands of different dtypes")
    names = {id(r): prog.buffers[r.buf].name for r in (x, w, bias, out) if r is not None}
    if p.kind == "gemm":
        return _gemm_launch(node, name, group, target, x, w, bias, out, p, names)
    spec = DepthwiseSpec(name=name, batch=x.shape[0], channels=x.shape[1], h=x.shape[2], w=x.shape[3],
                         kh=w.shape[2], kw=w.shape[3], stride=p.stride, padding=p.padding, dilation=p.dilation,
                         dtype=x.dtype, bias=bias is not None, x=names[id(x)], weight=names[id(w)],
                         b=names[id(bias)] if bias is not None else "b", out=names[id(out)])
    return library_launch(node.describe(), name, group.describe(), lambda: depthwise_source(lift(spec), target),
                          depthwise_args(spec))



def _gemm_launch(node, name: str, group: Group, target: Target, x, w, bias, out, p, names: dict) -> Launch:
    from sage.kernels.decompose import gemm_spec
    from sage.kernels.library.conv_gemm import conv_args, conv_source

    spec = gemm_spec(name, x.shape, w.shape, p.stride, p.padding, p.dilation, x.dtype, bias is not None,
                     x=names[id(x)], weight=names[id(w)], b=names[id(bias)] if bias is not None else "b",
                     out=names[id(out)])
    if spec is None:
        raise Unsupported(f"{node.describe()}: a convolution over {len(w.shape) - 2} spatial dims")
    return library_launch(node.describe(), name, group.describe(), lambda: conv_source(lift(spec), target), conv_args(spec))
