"""Roofline work of an aten call, for the operators the library has no kernel for.

Each call gets an operator class and three amounts of work:

- `bytes`: HBM traffic. Inputs plus outputs at their real sizes; for irregular access
  (gather, scatter, index) every element or row fetched costs at least one 32 B sector,
  the granularity of a GM transfer.
- `vector_cycles`: vector-unit work in cycles summed over cores, as element passes
  x the cost of one float32 `vadd` per element (2.07 cycles per 64-lane repeat, HW table).
  Sort, scan, pooling and interpolation set their number of passes below.
- `cube_flops`: 2 x MACs of matmuls and convolutions (convolution as im2col + matmul).

`roofline_us` turns work into time on a preset: the largest of bytes / HBM bandwidth,
vector cycles / (vector cores x clock) and flops / cube peak (x2 for float32 inputs).
"""

from __future__ import annotations

import math

from pydantic import BaseModel

from sage.bench.reference.aten import AtenCall, TensorMeta, dtype_size
from sage.npu.hardware import HardwareSpec

SECTOR = 32

MATMUL_OPS = {"mm", "addmm", "bmm", "baddbmm", "addbmm", "mv", "addmv", "dot", "matmul", "linear", "_grouped_mm"}
CONV_OPS = {"convolution", "_convolution", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
            "conv_transpose2d", "conv_transpose3d", "convolution_backward", "mkldnn_convolution",
            "_slow_conv2d_forward", "slow_conv3d_forward", "slow_conv_transpose2d", "_nnpack_spatial_convolution"}
GATHER_OPS = {"gather", "index", "index_select", "embedding", "take", "take_along_dim", "masked_select",
              "_embedding_bag", "grid_sampler_2d", "grid_sampler_3d"}
SCATTER_OPS = {"scatter", "scatter_add", "scatter_reduce", "index_put", "_index_put_impl", "index_add",
               "index_copy", "index_fill", "embedding_dense_backward", "masked_scatter", "put", "histc",
               "bincount", "_unsafe_index_put"}
SORT_OPS = {"sort", "argsort", "topk", "kthvalue", "median", "msort", "unique", "_unique", "_unique2",
            "unique_dim", "unique_consecutive", "mode", "nanmedian"}
SCAN_OPS = {"cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "_cummax_helper", "_cummin_helper"}
SELECT_OPS = {"nonzero", "nonzero_static", "argwhere"}
POOL_OPS = {"max_pool2d_with_indices", "max_pool3d_with_indices", "avg_pool2d", "avg_pool3d", "avg_pool1d",
            "max_pool1d", "max_pool2d", "max_pool3d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
            "_adaptive_avg_pool2d", "_adaptive_avg_pool3d", "adaptive_max_pool2d", "adaptive_max_pool3d",
            "max_pool3d_with_indices_backward", "avg_pool3d_backward", "max_pool2d_with_indices_backward"}
INTERP_OPS = {"upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d", "upsample_bilinear2d",
              "upsample_linear1d", "upsample_trilinear3d", "upsample_bicubic2d", "_upsample_nearest_exact2d",
              "_upsample_bilinear2d_aa"}
REDUCE_OPS = {"sum", "mean", "amax", "amin", "max", "min", "prod", "var", "std", "var_mean", "std_mean",
              "norm", "linalg_vector_norm", "argmax", "argmin", "all", "any", "logsumexp", "nll_loss_forward",
              "nll_loss2d_forward", "nansum", "count_nonzero", "aminmax", "_softmax", "_log_softmax",
              "native_layer_norm", "native_group_norm", "native_batch_norm", "_native_batch_norm_legit",
              "_native_batch_norm_legit_no_training", "_fused_rms_norm", "rms_norm", "nll_loss_backward",
              "_softmax_backward_data", "_log_softmax_backward_data", "native_layer_norm_backward",
              "native_group_norm_backward", "dist", "cosine_similarity", "cross_entropy_loss", "mse_loss",
              "l1_loss", "smooth_l1_loss", "binary_cross_entropy", "kl_div", "trace", "frobenius_norm"}
# Element passes per output element of ops that are several vector instructions each.
ELEMENTWISE_PASSES = {
    "where": 2, "masked_fill": 2, "threshold_backward": 3, "threshold": 3, "gelu_backward": 24,
    "silu_backward": 8, "hardsigmoid_backward": 4, "hardswish_backward": 6, "elu_backward": 6,
    "mish_backward": 20, "softplus_backward": 8, "leaky_relu_backward": 3, "sin": 12, "cos": 12,
    "tan": 20, "atan": 16, "asin": 16, "acos": 16, "erf": 14, "erfinv": 20, "floor_divide": 4,
    "remainder": 5, "fmod": 5, "pow": 3, "exp2": 2, "log2": 2, "log10": 2, "expm1": 2, "sign": 2,
    "sgn": 2, "lerp": 3, "addcmul": 2, "addcdiv": 3, "_foreach_addcmul": 2, "atan2": 20,
}


class Work(BaseModel):
    op_class: str
    bytes: float = 0.0
    vector_cycles: float = 0.0
    cube_flops: float = 0.0
    fp32_cube: bool = False


def pass_cycles(elems: float) -> float:
    """Vector cycles of one float32 pass over `elems` elements (vadd slope / 64 lanes)."""
    return elems * 2.07 / 64.0


def io_bytes(call: AtenCall) -> float:
    return float(sum(t.nbytes for t in call.inputs) + sum(t.nbytes for t in call.outputs))


def _out_numel(call: AtenCall) -> int:
    return call.outputs[0].numel if call.outputs else 0


def work_of(call: AtenCall) -> Work:
    name = call.name[:-1] if call.name.endswith("_") and not call.name.startswith("_") else call.name
    if name in MATMUL_OPS:
        return _matmul_work(call)
    if name in CONV_OPS:
        return _conv_work(call)
    out_n = _out_numel(call)
    if name in GATHER_OPS:
        return _gather_work(call, name)
    if name in SCATTER_OPS:
        upd = call.inputs[-1] if call.inputs else None
        n_upd = upd.numel if upd is not None else out_n
        b = io_bytes(call) + n_upd * SECTOR
        return Work(op_class="scatter", bytes=b, vector_cycles=pass_cycles(n_upd * 2))
    if name in SORT_OPS:
        x = call.inputs[0]
        L = x.shape[-1] if x.shape else 1
        passes = 4 * (1 + math.ceil(math.log(max(L, 32) / 32, 4)))
        return Work(op_class="sort", bytes=io_bytes(call), vector_cycles=pass_cycles(x.numel * passes))
    if name in SCAN_OPS:
        x = call.inputs[0]
        dim = call.scalars[0] if call.scalars and isinstance(call.scalars[0], int) else -1
        L = x.shape[dim] if x.shape else 1
        passes = 1 + math.ceil(math.log2(max(L, 2)))
        return Work(op_class="scan", bytes=io_bytes(call), vector_cycles=pass_cycles(x.numel * passes))
    if name in SELECT_OPS:
        x = call.inputs[0]
        passes = 2 + math.ceil(math.log2(max(x.numel, 2)))
        return Work(op_class="scan", bytes=io_bytes(call), vector_cycles=pass_cycles(x.numel * passes))
    if name in POOL_OPS:
        x = call.inputs[0]
        window = max(1, x.numel // max(out_n, 1))
        ks = [v for v in (call.scalars[0] if call.scalars and isinstance(call.scalars[0], list) else [])]
        if ks:
            window = math.prod(int(k) for k in ks)
        return Work(op_class="pool", bytes=io_bytes(call), vector_cycles=pass_cycles(out_n * window * 2))
    if name in INTERP_OPS:
        taps = 8 if ("linear" in name or "bicubic" in name) else 1
        return Work(op_class="interp", bytes=io_bytes(call), vector_cycles=pass_cycles(out_n * taps))
    if name in REDUCE_OPS:
        x = call.inputs[0] if call.inputs else None
        n = x.numel if x is not None else out_n
        return Work(op_class="reduction", bytes=io_bytes(call), vector_cycles=pass_cycles(n * 2))
    passes = ELEMENTWISE_PASSES.get(name, 1)
    klass = "elementwise" if call.outputs and call.inputs and out_n >= max(t.numel for t in call.inputs) else "copy"
    if name in ("cat", "stack", "constant_pad_nd", "repeat", "flip", "roll", "clone", "_to_copy", "copy",
                "contiguous", "fill", "zero", "zeros", "ones", "full", "zeros_like", "ones_like", "full_like",
                "arange", "tril", "triu", "pad", "reflection_pad2d", "replication_pad2d", "repeat_interleave",
                "slice_scatter", "select_scatter", "diagonal_scatter", "as_strided_scatter", "new_zeros",
                "new_full", "new_ones", "_unsafe_index", "narrow_copy", "expand_copy", "permute_copy"):
        klass, passes = "copy", 0
    return Work(op_class=klass, bytes=io_bytes(call), vector_cycles=pass_cycles(out_n * passes))


def _gather_work(call: AtenCall, name: str) -> Work:
    out_n = _out_numel(call)
    out = call.outputs[0]
    src = call.inputs[0]
    idx = [t for t in call.inputs[1:] if t.dtype.startswith("int") or t.dtype == "bool"]
    n_idx = max((t.numel for t in idx), default=out_n)
    if name == "embedding":
        src, n_idx = call.inputs[0], call.inputs[1].numel
    row = max(1, out_n // max(n_idx, 1)) if name not in ("gather", "take", "take_along_dim") else 1
    row_bytes = row * dtype_size(src.dtype)
    reads = (out_n // row) * max(SECTOR, math.ceil(row_bytes / SECTOR) * SECTOR)
    b = reads + out.nbytes + sum(t.nbytes for t in idx)
    return Work(op_class="gather", bytes=float(b), vector_cycles=pass_cycles(out_n))


def _matmul_work(call: AtenCall) -> Work:
    out = call.outputs[0]
    mats = [t for t in call.inputs if len(t.shape) >= 1]
    # K is the reduced dimension: the last dim of the left operand (the second-to-last
    # operand when a bias/accumulator comes first).
    left = mats[-2] if len(mats) >= 2 else mats[0]
    K = left.shape[-1] if left.shape else 1
    flops = 2.0 * out.numel * K
    return Work(op_class="matmul", bytes=io_bytes(call), cube_flops=flops,
                fp32_cube=left.dtype == "float32")


def _conv_work(call: AtenCall) -> Work:
    x, w = call.inputs[0], call.inputs[1]
    out = call.outputs[0]
    transposed = bool(call.scalars[3]) if len(call.scalars) > 3 and isinstance(call.scalars[3], bool) else False
    groups = int(call.scalars[-1]) if call.scalars and isinstance(call.scalars[-1], int) else 1
    k_spatial = math.prod(w.shape[2:]) if len(w.shape) > 2 else 1
    if transposed:
        flops = 2.0 * x.numel * (w.shape[1]) * k_spatial
    else:
        flops = 2.0 * out.numel * (w.shape[1]) * k_spatial
    _ = groups  # w.shape[1] is already Cin/groups (or Cout/groups when transposed)
    return Work(op_class="conv", bytes=io_bytes(call), cube_flops=flops, fp32_cube=x.dtype == "float32")


def roofline_us(work: Work, hw: HardwareSpec) -> float:
    """The bound: the slowest of the three resources, each at its peak."""
    mem = work.bytes / (hw.chip.hbm_gbps * 1e3)
    vec = work.vector_cycles / (hw.chip.aiv_cores * hw.chip.clock_mhz)
    peak = 2.0 * hw.cube.peak_macs_per_cycle * hw.chip.aic_cores * hw.chip.clock_mhz
    if work.fp32_cube:
        peak /= hw.cube.fp32_factor
    cube = work.cube_flops / peak
    return max(mem, vec, cube)


def dominant(work: Work, hw: HardwareSpec) -> str:
    mem = work.bytes / (hw.chip.hbm_gbps * 1e3)
    vec = work.vector_cycles / (hw.chip.aiv_cores * hw.chip.clock_mhz)
    peak = 2.0 * hw.cube.peak_macs_per_cycle * hw.chip.aic_cores * hw.chip.clock_mhz / (
        hw.cube.fp32_factor if work.fp32_cube else 1.0)
    cube = work.cube_flops / peak
    return max((mem, "memory"), (vec, "vector"), (cube, "cube"))[1]


def tensor_bytes(ts: list[TensorMeta]) -> float:
    return float(sum(t.nbytes for t in ts))
