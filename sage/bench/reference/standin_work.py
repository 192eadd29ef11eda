"""The work of a torch_npu stand-in op (sage.bench.torch_npu_standin) as the one fused kernel
it is on the chip: bytes moved, vector passes and cube FLOPs from its shapes, timed by the
vendor model like any fused kernel (vendor.py, the group of its dominant unit).

A stand-in reaches the trace as `npu_standin::<op>` (one AtenCall whose inputs are its tensor
arguments in order). Each table row gives the op's cube FLOPs and vector element-passes
from its arguments, bound by name to the op's schema; bytes are its tensors read and written
once (a mutated argument written back). Every row is *modelled* (counted from the op's
definition, timed at the model's rates) except where `CALIBRATION` holds a public figure.

Calibration: huawei-csl/pto-dsl PR 126 (https://github.com/huawei-csl/pto-dsl/pull/126)
reports torch_npu's fused attention on a 910B at Q rows 3072, head dim 128, one head:
175.53 us at 8192 keys and 242.52 us at 16384 (73.4 and 106.3 TFLOP/s, 4*Sq*Skv*D FLOPs).
The 8192 point sets the fused attention's cube efficiency factor; the 16384 point is held
out (tests/bench/test_standin_work.py checks it).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from sage.bench.reference.work import Work, cube_tiles, pass_cycles
from sage.kernels import AtenCall, TensorMeta
from sage.npu.hardware import HardwareSpec

NAMESPACE = "npu_standin"
Args = dict[str, Any]        # schema name -> TensorMeta, a scalar, or None


@dataclass(frozen=True)
class Cost:
    """cube FLOPs and vector element-passes of one call, from its bound arguments."""
    cube_flops: Callable[[Args], float]
    vector_elems: Callable[[Args], float]
    source: str = "modelled"


def _n(a: Args, name: str) -> int:
    t = a.get(name)
    return t.numel if isinstance(t, TensorMeta) else 0


def _shape(a: Args, name: str) -> list[int]:
    t = a.get(name)
    return list(t.shape) if isinstance(t, TensorMeta) else []


def _matmul_flops(a: Args, left: str, right: str) -> float:
    """2*M*N*K over the batch of left @ right."""
    x, w = _shape(a, left), _shape(a, right)
    if len(x) < 2 or len(w) < 2:
        return 0.0
    batch = math.prod(x[:-2]) if len(x) > 2 else 1
    return 2.0 * batch * x[-2] * x[-1] * w[-1]


def _attention_flops(a: Args) -> float:
    """4*B*N*Sq*Skv*D (QK^T and PV): 4 * (query elements) * Skv, halved for a causal sparse
    mode (2, 3) with a mask (without one the whole matrix is computed)."""
    q, k = a["query"], a["key"]
    layout = a.get("input_layout", "BSH")
    axis = {"SBH": 0, "BNSD": 2}.get(layout, 1)
    causal = a.get("atten_mask") is not None and a.get("sparse_mode", 0) in (2, 3)
    return 4.0 * q.numel * k.shape[axis] * (0.5 if causal else 1.0)


def _attention_vec(a: Args) -> float:
    """scale, max, subtract, exp, sum, divide over every score: 6 passes of B*N*Sq*Skv
    (the FLOPs over 4*D)."""
    q = a["query"]
    if a.get("input_layout", "BSH") in ("BSND", "BNSD"):
        d = q.shape[-1]
    else:
        d = q.shape[-1] // max(a.get("head_num") or a.get("num_heads") or 1, 1)
    return 6.0 * _attention_flops(a) / 4.0 / max(d, 1)


def _indexer_flops(a: Args) -> float:
    """q . k for every query head and key position: 2 * (query elements) * S2 (S2 per batch)."""
    k = _shape(a, "key")
    s2 = k[1] if a.get("layout_key", "BSND") == "BSND" and len(k) == 4 else (k[0] if k else 0)
    return 2.0 * _n(a, "query") * s2


def _sparse_positions(a: Args) -> float:
    """Selected key positions per query row: indices per row times the block size."""
    idx = _shape(a, "sparse_indices")
    return (idx[-1] if idx else 0) * (a.get("sparse_block_size") or 1)


def _elems(*names: str, passes: float) -> Callable[[Args], float]:
    return lambda a: passes * max((_n(a, n) for n in names), default=0)


_NONE: Callable[[Args], float] = lambda a: 0.0

# op -> cost; vector passes count the op's elementwise steps in float32 (e.g. rotary: 2 mul,
# 1 add, 1 rotate-negate), a sort as 4 passes per merge level as the eager sort rule does.
TABLE: dict[str, Cost] = {
    "npu_rotary_mul": Cost(_NONE, _elems("input", passes=4)),
    "npu_interleave_rope": Cost(_NONE, _elems("x", passes=5)),
    "npu_group_norm_swish": Cost(_NONE, _elems("input", passes=9)),
    "npu_moe_gating_top_k_softmax": Cost(_NONE, _elems("x", passes=8)),
    "npu_moe_init_routing": Cost(_NONE, lambda a: 4 * _n(a, "expert_idx") * max(math.log2(max(_n(a, "expert_idx"), 2)), 1)),
    "npu_moe_compute_expert_tokens": Cost(_NONE, _elems("sorted_expert_for_source_row", passes=2)),
    "npu_moe_finalize_routing": Cost(_NONE, _elems("expanded_permuted_rows", passes=3)),
    "npu_apply_adam": Cost(_NONE, _elems("var", passes=12)),
    "npu_iou": Cost(_NONE, lambda a: 12.0 * (_n(a, "bboxes") // 4) * (_n(a, "gtboxes") // 4)),
    "npu_top_k_top_p": Cost(_NONE, lambda a: _n(a, "logits") * (8 + 4 * math.log2(max(_shape(a, "logits")[-1:] or [2])))),
    "npu_advance_step_flashattn": Cost(_NONE, _elems("input_tokens", passes=6)),
    "npu_dynamic_quant": Cost(_NONE, _elems("x", passes=5)),
    "npu_swiglu_quant": Cost(_NONE, _elems("x", passes=5)),
    "npu_dequant_swiglu_quant": Cost(_NONE, _elems("x", passes=7)),
    "npu_quant_scatter": Cost(_NONE, _elems("updates", passes=3)),
    "npu_quant_matmul": Cost(lambda a: _matmul_flops(a, "x1", "x2"), _NONE),
    "npu_quant_matmul_reduce_sum": Cost(lambda a: _matmul_flops(a, "x1", "x2"), _NONE),
    "npu_weight_quant_batchmatmul": Cost(lambda a: _matmul_flops(a, "x", "weight"), _elems("weight", passes=2)),
    "npu_grouped_matmul_swiglu_quant_v2": Cost(lambda a: 2.0 * _n(a, "x") * _shape(a, "weight")[-1],
                                               _elems("x", passes=0)),
    "npu_ffn": Cost(lambda a: _matmul_flops(a, "x", "weight1") + 2.0 * (_n(a, "x") // max(_shape(a, "x")[-1], 1))
                    * math.prod(_shape(a, "weight2")[-2:]), _NONE),
    "npu_lightning_indexer": Cost(_indexer_flops, lambda a: 3.0 * _indexer_flops(a) / 2 / max(_shape(a, "query")[-1:] or [1])
                                  * (1 + math.log2(max(a.get("sparse_count") or 2, 2)) / 8)),
    "npu_sparse_flash_attention": Cost(lambda a: 4.0 * _n(a, "query") * _sparse_positions(a),
                                       lambda a: 6.0 * _n(a, "query") / max(_shape(a, "query")[-1:] or [1])
                                       * _sparse_positions(a)),
    "npu_fusion_attention": Cost(_attention_flops, _attention_vec, source="calibrated: huawei-csl/pto-dsl PR 126"),
    "npu_fused_infer_attention_score": Cost(_attention_flops, _attention_vec,
                                            source="calibrated: huawei-csl/pto-dsl PR 126 (fusion attention figure)"),
}

@dataclass(frozen=True)
class Figure:
    """A public device time of one op at one shape (the shapes as the op's schema names them)."""
    args: dict
    device_us: float
    url: str


_FA_PR = "https://github.com/huawei-csl/pto-dsl/pull/126"


def _fa_args(skv: int) -> dict:
    q = TensorMeta(shape=[1, 1, 3072, 128], dtype="float16")
    kv = TensorMeta(shape=[1, 1, skv, 128], dtype="float16")
    return {"query": q, "key": kv, "value": kv, "head_num": 1, "input_layout": "BNSD", "atten_mask": None,
            "sparse_mode": 0}


# The figure each calibrated op is fitted to, and the held-out ones that check the fit.
CALIBRATION: dict[str, Figure] = {"npu_fusion_attention": Figure(_fa_args(8192), 175.53, _FA_PR)}
CALIBRATION["npu_fused_infer_attention_score"] = CALIBRATION["npu_fusion_attention"]
HELD_OUT: dict[str, list[Figure]] = {"npu_fusion_attention": [Figure(_fa_args(16384), 242.52, _FA_PR)]}


def bind(call: AtenCall) -> Args:
    """The call's arguments by schema name: positional arguments in order (tensors from
    `inputs`, others from `scalars`), then keywords; an argument left out takes its default."""
    schema = getattr(torch.ops, NAMESPACE).__getattr__(call.name).default._schema
    tensors, scalars = iter(call.inputs), iter(call.scalars)
    out: Args = {}
    kinds = call.arg_kinds or []
    for arg, kind in zip(schema.arguments, kinds):
        out[arg.name] = next(tensors) if kind == "tensor" else next(scalars)
    for arg in schema.arguments[len(kinds):]:
        out[arg.name] = call.kwargs.get(arg.name, arg.default_value if arg.has_default_value() else None)
    return out


def standin_work(call: AtenCall, hw: HardwareSpec) -> Work | None:
    """The fused work of a stand-in call, None for any other op."""
    cost = TABLE.get(call.name)
    if cost is None or not _is_standin(call.name):
        return None
    written = sum(t.nbytes for t in call.outputs) or sum(t.nbytes for t in call.inputs[:1])
    work = work_from(call.name, bind(call), float(sum(t.nbytes for t in call.inputs) + written), hw)
    return work.model_copy(update={"cube_flops": work.cube_flops * cube_factor(call.name, hw)})


def work_from(name: str, a: Args, nbytes: float, hw: HardwareSpec) -> Work:
    """The uncalibrated fused work of op `name` on bound arguments `a` moving `nbytes`."""
    cost = TABLE[name]
    flops = cost.cube_flops(a)
    side = int(math.sqrt(flops / 2)) or 1
    return Work(op_class=None, bytes=nbytes, vector_cycles=pass_cycles(cost.vector_elems(a), hw),
                cube_flops=flops, cube_tiles=cube_tiles(side, side) if flops else 0)


_FACTORS: dict[tuple[str, int], tuple[HardwareSpec, float]] = {}


def cube_factor(name: str, hw: HardwareSpec) -> float:
    """The factor on the op's cube FLOPs that makes the vendor model give its public figure
    (1.0 with no figure): found by bisection, so it follows the vendor parameters; kept per
    spec object (a spec is not hashable; the object is kept so its id is not reused)."""
    fig = CALIBRATION.get(name)
    if fig is None:
        return 1.0
    seen = _FACTORS.get((name, id(hw)))
    if seen is not None and seen[0] is hw:
        return seen[1]
    factor = _fit(name, fig, hw)
    _FACTORS[(name, id(hw))] = (hw, factor)
    return factor


def _fit(name: str, fig: Figure, hw: HardwareSpec) -> float:
    from sage.bench.reference.vendor import group_of, vendor_time
    nbytes = float(sum(v.nbytes for v in fig.args.values() if isinstance(v, TensorMeta)) + fig.args["query"].nbytes)
    base = work_from(name, fig.args, nbytes, hw)

    def device_us(f: float) -> float:
        w = base.model_copy(update={"cube_flops": base.cube_flops * f})
        return vendor_time(w, group_of(None, w, hw), hw).device_us

    lo, hi = 1e-3, 1e3
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if device_us(mid) < fig.device_us else (lo, mid)
    return math.sqrt(lo * hi)


def _is_standin(name: str) -> bool:
    return hasattr(getattr(torch.ops, NAMESPACE), name)
