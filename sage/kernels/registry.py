"""The op registry: every aten operator the project understands, one entry each.

An entry (`OpDef`) says, for one aten overload packet:

- `cost_class`: the reference model's class (`CostClass`, what a calibration is keyed on);
  None for views and allocations, which launch no kernel;
- `work`: how its roofline work is counted (`WorkRule`, with `passes` vector passes per
  output element for elementwise work);
- its semantics: `promotion` (the result dtype), `broadcast` (tensor operands broadcast
  against each other), `float_only` (torch defines it for floating operands only);
- how it lowers: `chain` (to an elementwise chain of `vector_ops`, rules in `aten_rules`;
  a `vendor` form is also what the reference model times the eager op with), `row` (a
  last-axis row kernel of the library), `cube` (the library's matmul: operand positions),
  `prim` (the compiler's primitive kind: reduce, scan, sort, gather, scatter, fill, iota,
  matmul), or `decompose` (simpler aten ops, written in torch in `decompose.py`; the
  compiler records those instead, `trace_graph(..., decompose=True)`).

Adding an op is one entry here plus one test (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TYPE_CHECKING

from sage.kernels import aten_rules as r
from sage.kernels import decompose as d
from sage.kernels import decompose_pool as pool
from sage.kernels.decompose_index import bucketize, embedding_dense_backward, gather, searchsorted
from sage.kernels.decompose_interp import adaptive_avg_pool, upsample_bicubic2d
from sage.kernels.decompose_pointwise import DECOMPOSED as POINTWISE_DECOMPOSED

if TYPE_CHECKING:
    from sage.kernels.aten_rules import ChainRule
    from sage.kernels.record import AtenCall


class CostClass(StrEnum):
    ELEMENTWISE = "elementwise"
    BROADCAST = "broadcast"          # elementwise with an operand broadcast along some axes
    REDUCTION = "reduction"
    SOFTMAX_NORM = "softmax_norm"
    COPY = "copy"                    # copy, cast, transpose, cat, pad, fill
    INDEX = "index"                  # gather, scatter, index, embedding
    SORT = "sort"                    # sort, topk, unique, median
    SCAN = "scan"                    # cumsum and friends, nonzero
    MATMUL = "matmul"
    CONV = "conv"
    OTHER = "other"                  # pooling, interpolation


class WorkRule(StrEnum):
    """Which roofline formula counts an op's work (bench/reference/work.py)."""

    ELEMENTWISE = "elementwise"
    COPY = "copy"
    REDUCE = "reduce"
    GATHER = "gather"
    SCATTER = "scatter"
    SORT = "sort"
    SCAN = "scan"
    SELECT = "select"
    POOL = "pool"
    INTERP = "interp"
    MATMUL = "matmul"
    CONV = "conv"


class Promotion(StrEnum):
    SAME = "same"      # torch.result_type of the operands, Python numbers included
    FLOAT = "float"    # as SAME, but an integral result becomes the default float dtype
    BOOL = "bool"      # a bool tensor (comparisons, logic)
    CAST = "cast"      # the dtype it is given (a cast)


@dataclass(frozen=True)
class ChainForm:
    rule: ChainRule
    vendor: bool = True    # the reference model times the eager op as this chain's library kernel


@dataclass(frozen=True)
class RowForm:
    op: str                # the library RowSpec op: sum mean max min softmax log_softmax layer_norm
    passes: int            # vector passes per input element (the op's roofline vector work)
    indices: bool = False  # its dim overload also returns the indices (aten.max.dim)


@dataclass(frozen=True)
class CubeForm:
    a: int                 # input positions of A, B and the bias
    b: int
    bias: int | None = None
    batched: bool = False


@dataclass(frozen=True)
class Prim:
    """How the compiler lowers an op that is neither a chain nor a decomposition.

    `kind` names the lowering (reduce, argreduce, scan, sort, topk, gather, index_select,
    index_copy, index_add, scatter, fill, iota, matmul); `op` the combining function
    (sum, max, min, prod, any, all for reductions and scans); `dims`/`keepdim` the
    positions of those arguments among the call's Python arguments (None: absent)."""

    kind: str
    op: str = ""
    dims: int | None = None
    keepdim: int | None = None


@dataclass(frozen=True)
class OpDef:
    name: str
    cost_class: CostClass | None           # None: a view or an allocation, no kernel
    work: WorkRule | None = None
    passes: int = 1
    promotion: Promotion | None = None
    broadcast: bool = False
    float_only: bool = False
    chain: tuple[ChainForm, ...] = ()
    row: RowForm | None = None
    cube: CubeForm | None = None
    keeps_order: bool = False              # a view whose elements keep their order (reshape, unsqueeze)
    prim: Prim | None = None               # the compiler's primitive kind for this op
    decompose: Callable | None = None      # torch code with the op's signature, in simpler ops
    decompose_inplace: Callable | None = None   # the same for the in-place variant (index_put_)
    dynamic_shape: bool = False            # the output shape depends on the input values

    @property
    def free(self) -> bool:
        return self.cost_class is None

    @property
    def lowers(self) -> bool:
        """The compiler has a way to take the op itself (an entry can exist only for the
        reference model's cost, as matmul's and pad's do)."""
        return bool(self.chain or self.row or self.cube or self.prim or self.decompose or self.free)


C, W, P = CostClass, WorkRule, Promotion


def _ew(name: str, *forms: ChainForm, passes: int = 1, promotion: Promotion = P.SAME, broadcast: bool = False,
        float_only: bool = False, cost: CostClass = C.ELEMENTWISE, work: WorkRule = W.ELEMENTWISE) -> OpDef:
    return OpDef(name, cost, work, passes, promotion, broadcast, float_only, tuple(forms))


def _bin(name: str, *forms: ChainForm, **kw) -> OpDef:
    return _ew(name, *forms, broadcast=True, **kw)


def vendor(rule: ChainRule) -> ChainForm:
    return ChainForm(rule)


def agent(rule: ChainRule) -> ChainForm:
    """A chain the offline compiler lowers to, while the reference model times the eager op
    by formula (no vendor library form)."""
    return ChainForm(rule, vendor=False)


def _family(cost: CostClass | None, work: WorkRule | None, names: str, **kw) -> list[OpDef]:
    return [OpDef(n, cost, work, **kw) for n in names.split()]


_ELEMENTWISE = [
    # -- unary with a library chain -------------------------------------------------------------
    *[_ew(n, vendor(r.unary(n)), promotion=P.FLOAT) for n in
      ("exp", "log", "sqrt", "rsqrt", "reciprocal", "sigmoid", "tanh", "log1p")],
    *[_ew(n, vendor(r.unary(n))) for n in ("abs", "neg", "relu", "square")],
    *[_ew(n, vendor(r.unary(n)), float_only=True) for n in ("silu", "mish", "hardsigmoid", "hardswish")],
    _ew("positive", vendor(r.unary("identity"))),
    _ew("gelu", vendor(r.gelu), float_only=True),
    _ew("leaky_relu", vendor(r.leaky_relu), float_only=True),
    _ew("elu", vendor(r.elu), float_only=True),
    _ew("softplus", vendor(r.softplus), float_only=True),
    _ew("clamp", vendor(r.clamp(0, 1))),
    _ew("clamp_min", vendor(r.clamp(0, None))),
    _ew("clamp_max", vendor(r.clamp(None, 0))),
    _ew("hardtanh", vendor(r.clamp(0, 1, -1.0, 1.0))),
    _ew("pow", vendor(r.pow_scalar), agent(r.pow_base), passes=3, broadcast=True),
    _bin("sigmoid_backward", vendor(r.sigmoid_backward), float_only=True),
    _bin("tanh_backward", vendor(r.tanh_backward), float_only=True),
    _ew("floor", agent(r.floor)),
    *[_ew(n, agent(r.unary(n))) for n in ("ceil", "trunc", "round")],
    *[_ew(n, agent(r.unary(n)), promotion=P.FLOAT, passes=12) for n in ("sin", "cos")],
    _ew("sign", agent(r.sign), passes=2),
    _ew("expm1", agent(r.expm1), promotion=P.FLOAT, passes=2),
    _ew("exp2", agent(r.exp_base(2.0)), promotion=P.FLOAT, passes=2),
    *[_ew(n, agent(r.log_base(b)), promotion=P.FLOAT, passes=2) for n, b in (("log2", 2.0), ("log10", 10.0))],
    # -- copies as identity chains (a transposing copy is timed as a copy by formula) ------------
    *[_ew(n, vendor(r.contiguous_copy), cost=C.COPY, work=W.COPY, passes=0) for n in ("clone", "contiguous")],
    _ew("_to_copy", vendor(r.contiguous_copy), cost=C.COPY, work=W.COPY, passes=0, promotion=P.CAST),
    _ew("copy", vendor(r.copy_from), cost=C.COPY, work=W.COPY, passes=0, promotion=P.CAST, broadcast=True),
    # -- binary ---------------------------------------------------------------------------------
    *[_bin(n, vendor(r.binary(n, alpha=True)), agent(r.with_mask(n))) for n in ("add", "sub")],
    _bin("mul", vendor(r.binary("mul")), agent(r.with_mask("mul"))),
    *[_bin(n, vendor(r.binary(n)), agent(r.with_mask(n))) for n in ("maximum", "minimum")],
    _bin("div", vendor(r.binary("div", rounding=True)), agent(r.div_rounding), promotion=P.FLOAT),
    _bin("true_divide", vendor(r.binary("div")), promotion=P.FLOAT),
    _bin("logaddexp", vendor(r.binary("log_add_exp")), promotion=P.FLOAT, float_only=True),
    _bin("rsub", vendor(r.rsub)),
    _bin("floor_divide", agent(r.floor_divide), passes=4),
    # -- comparisons, logic, selects -------------------------------------------------------------
    *[_bin(n, agent(r.compare(n)), promotion=P.BOOL) for n in ("gt", "lt", "ge", "le", "eq", "ne")],
    _bin("logical_and", agent(r.logic("mul")), promotion=P.BOOL),
    _bin("logical_or", agent(r.logic("maximum")), promotion=P.BOOL),
    _bin("bitwise_and", agent(r.logic("mul", bitwise=True))),
    _bin("bitwise_or", agent(r.logic("maximum", bitwise=True))),
    # `a & b` and `a | b` dispatch as these (aten::__and__.Tensor has its own kernel entry)
    _bin("__and__", agent(r.logic("mul", bitwise=True))),
    _bin("__or__", agent(r.logic("maximum", bitwise=True))),
    _ew("logical_not", agent(r.logical_not()), promotion=P.BOOL),
    _ew("bitwise_not", agent(r.logical_not(bitwise=True))),
    _bin("where", agent(r.where), passes=2),
    _bin("masked_fill", agent(r.masked_fill), passes=2),
    _ew("threshold", agent(r.threshold), passes=3),
    # -- elementwise without a chain form: timed by formula, passes = vector instructions --------
    *[_ew(n, passes=p, promotion=P.FLOAT) for n, p in (
        ("tan", 20), ("atan", 16), ("asin", 16), ("acos", 16), ("erf", 14), ("erfinv", 20),
        )],
    *[_bin(n, passes=p, float_only=True) for n, p in (
        ("threshold_backward", 3), ("gelu_backward", 24), ("silu_backward", 8), ("hardsigmoid_backward", 4),
        ("hardswish_backward", 6), ("elu_backward", 6), ("mish_backward", 20), ("softplus_backward", 8),
        ("leaky_relu_backward", 3), ("lerp", 3), ("addcdiv", 3))],
    _bin("remainder", agent(r.remainder), passes=5),
    _bin("fmod", agent(r.fmod), passes=5),
    *[_bin(n, passes=p) for n, p in (("addcmul", 2), ("_foreach_addcmul", 2))],
    _bin("atan2", passes=20, promotion=P.FLOAT),
    _ew("sgn", agent(r.sign), passes=2),
]

_ROW = [
    *[OpDef(n, C.REDUCTION, W.REDUCE, row=RowForm(n, 2)) for n in ("sum", "mean")],
    OpDef("amax", C.REDUCTION, W.REDUCE, row=RowForm("max", 2)),
    OpDef("amin", C.REDUCTION, W.REDUCE, row=RowForm("min", 2)),
    *[OpDef(n, C.REDUCTION, W.REDUCE, row=RowForm(n, 2, indices=True)) for n in ("max", "min")],
    OpDef("_softmax", C.SOFTMAX_NORM, W.REDUCE, row=RowForm("softmax", 5)),
    OpDef("_log_softmax", C.SOFTMAX_NORM, W.REDUCE, row=RowForm("log_softmax", 5)),
    OpDef("native_layer_norm", C.SOFTMAX_NORM, W.REDUCE, row=RowForm("layer_norm", 7)),
]

_CUBE = [
    OpDef("mm", C.MATMUL, W.MATMUL, cube=CubeForm(0, 1)),
    OpDef("bmm", C.MATMUL, W.MATMUL, cube=CubeForm(0, 1, batched=True)),
    OpDef("addmm", C.MATMUL, W.MATMUL, cube=CubeForm(1, 2, bias=0)),
    OpDef("baddbmm", C.MATMUL, W.MATMUL, cube=CubeForm(1, 2, bias=0, batched=True)),
]

_FORMULA_ONLY = [
    *_family(C.MATMUL, W.MATMUL, "addbmm mv addmv dot matmul linear _grouped_mm"),
    *_family(C.CONV, W.CONV, "convolution _convolution conv1d conv2d conv3d conv_transpose1d conv_transpose2d "
             "conv_transpose3d convolution_backward mkldnn_convolution _slow_conv2d_forward slow_conv3d_forward "
             "slow_conv_transpose2d _nnpack_spatial_convolution"),
    *_family(C.INDEX, W.GATHER, "gather index index_select embedding take take_along_dim masked_select "
             "_embedding_bag grid_sampler_2d grid_sampler_3d"),
    *_family(C.INDEX, W.SCATTER, "scatter scatter_add scatter_reduce index_put _index_put_impl index_add index_copy "
             "index_fill embedding_dense_backward masked_scatter put histc bincount _unsafe_index_put"),
    *_family(C.SORT, W.SORT, "searchsorted bucketize"),
    *_family(C.SORT, W.SORT, "sort argsort topk kthvalue median msort unique _unique _unique2 unique_dim "
             "unique_consecutive mode nanmedian"),
    *_family(C.SCAN, W.SCAN, "cumsum cumprod cummax cummin logcumsumexp _cummax_helper _cummin_helper"),
    *_family(C.SCAN, W.SELECT, "nonzero nonzero_static argwhere"),
    *_family(C.OTHER, W.POOL, "max_pool2d_with_indices max_pool3d_with_indices avg_pool2d avg_pool3d avg_pool1d "
             "max_pool1d max_pool2d max_pool3d adaptive_avg_pool2d adaptive_avg_pool3d _adaptive_avg_pool2d "
             "_adaptive_avg_pool3d adaptive_max_pool2d adaptive_max_pool3d max_pool3d_with_indices_backward "
             "avg_pool3d_backward max_pool2d_with_indices_backward"),
    *_family(C.OTHER, W.INTERP, "upsample_nearest1d upsample_nearest2d upsample_nearest3d upsample_bilinear2d "
             "upsample_linear1d upsample_trilinear3d upsample_bicubic2d _upsample_nearest_exact2d "
             "_upsample_bilinear2d_aa"),
    *_family(C.REDUCTION, W.REDUCE, "prod var std var_mean std_mean norm linalg_vector_norm argmax argmin all any "
             "logsumexp nll_loss_forward nll_loss2d_forward nansum count_nonzero aminmax nll_loss_backward dist "
             "cosine_similarity cross_entropy_loss mse_loss l1_loss smooth_l1_loss binary_cross_entropy kl_div trace "
             "frobenius_norm"),
    *_family(C.SOFTMAX_NORM, W.REDUCE, "native_group_norm native_batch_norm _native_batch_norm_legit "
             "_native_batch_norm_legit_no_training _fused_rms_norm rms_norm _softmax_backward_data "
             "_log_softmax_backward_data native_layer_norm_backward native_group_norm_backward"),
    *_family(C.COPY, W.COPY, "cat stack constant_pad_nd repeat flip roll fill zero zeros ones full zeros_like "
             "ones_like full_like arange tril triu pad reflection_pad1d reflection_pad2d reflection_pad3d replication_pad1d "
             "replication_pad2d replication_pad3d repeat_interleave "
             "slice_scatter select_scatter diagonal_scatter as_strided_scatter new_zeros new_full new_ones "
             "_unsafe_index narrow_copy expand_copy permute_copy", passes=0),
]

# Views and allocations: metadata only, no kernel. The first group keeps element order, so
# an elementwise kernel can read the original buffer through it.
_FREE = [
    *_family(None, None, "view _unsafe_view reshape _reshape_alias unsqueeze squeeze expand alias detach lift_fresh "
             "flatten unflatten view_as expand_as", keeps_order=True),
    *_family(None, None, "broadcast_tensors"),
    *_family(None, None, "permute transpose t slice select as_strided split split_with_sizes unbind chunk narrow "
             "diagonal unfold view_as_real view_as_complex real imag empty empty_like empty_strided new_empty "
             "new_empty_strided _to_dense movedim swapaxes numpy_T mT mH adjoint resolve_conj resolve_neg set_ "
             "_local_scalar_dense item is_nonzero sym_size sym_stride sym_numel size stride dim lift_fresh_copy "
             "scalar_tensor"),
]


def _table(entries: list[OpDef]) -> dict[str, OpDef]:
    table: dict[str, OpDef] = {}
    for e in entries:
        if e.name in table:
            raise ValueError(f"aten op {e.name!r} has two registry entries")
        table[e.name] = e
    return table


# How the compiler lowers ops without a chain form: a primitive kind ...
_PRIMS: dict[str, Prim] = {
    "sum": Prim("reduce", "sum", 0, 1), "nansum": Prim("reduce", "sum", 0, 1),
    "mean": Prim("reduce", "mean", 0, 1), "prod": Prim("reduce", "prod", 0, 1),
    "amax": Prim("reduce", "max", 0, 1), "amin": Prim("reduce", "min", 0, 1),
    "max": Prim("argreduce", "max", 0, 1), "min": Prim("argreduce", "min", 0, 1),
    "argmax": Prim("argreduce", "argmax", 0, 1), "argmin": Prim("argreduce", "argmin", 0, 1),
    "any": Prim("reduce", "any", 0, 1), "all": Prim("reduce", "all", 0, 1),
    "cumsum": Prim("scan", "sum", 0), "cumprod": Prim("scan", "prod", 0),
    "sort": Prim("sort"), "argsort": Prim("sort"), "topk": Prim("topk"),
    "gather": Prim("gather"), "index_select": Prim("index_select"), "take_along_dim": Prim("gather"),
    "index_copy": Prim("index_copy"), "index_add": Prim("index_add"),
    "index_put": Prim("index_copy"), "_unsafe_index_put": Prim("index_copy"),   # one row index (decompose.py)
    "scatter": Prim("scatter"), "scatter_add": Prim("scatter", "sum"), "scatter_reduce": Prim("scatter"),
    "fill": Prim("fill"), "zero": Prim("fill"), "zeros": Prim("fill"), "ones": Prim("fill"), "full": Prim("fill"),
    "zeros_like": Prim("fill"), "ones_like": Prim("fill"), "full_like": Prim("fill"), "new_zeros": Prim("fill"),
    "new_ones": Prim("fill"), "new_full": Prim("fill"), "scalar_tensor": Prim("fill"),
    "arange": Prim("iota"),
    "mm": Prim("matmul"), "bmm": Prim("matmul"),
    "convolution": Prim("conv"),    # kept whole only where decompose.convolution says so
    "bincount": Prim("index_add"), "histc": Prim("index_add"),
}
# ... or torch code in simpler ops (in-place variants separately: they must mutate).
_DECOMPOSED: dict[str, Callable] = {
    "_softmax": d.softmax, "_log_softmax": d.log_softmax, "logsumexp": d.logsumexp,
    "var": d.var, "std": d.std, "native_layer_norm": d.native_layer_norm,
    "native_group_norm": d.native_group_norm, "rms_norm": d.rms_norm,
    "nll_loss_forward": d.nll_loss_forward, "addmm": d.addmm, "baddbmm": d.baddbmm, "mv": d.mv, "dot": d.dot,
    "cat": d.cat, "stack": d.stack, "constant_pad_nd": d.constant_pad_nd,
    **{f"reflection_pad{k}d": d.reflection_pad for k in (1, 2, 3)},
    **{f"replication_pad{k}d": d.replication_pad for k in (1, 2, 3)}, "nll_loss2d_forward": d.nll_loss_forward, "repeat": d.repeat, "flip": d.flip, "roll": d.roll,
    "embedding": d.embedding, "embedding_dense_backward": embedding_dense_backward, "index": d.index,
    "searchsorted": searchsorted, "bucketize": bucketize,
    "_unsafe_index": d.index, "index_put": d.index_put,
    "_unsafe_index_put": d.index_put, "repeat_interleave": d.repeat_interleave, "triu": d.triu, "tril": d.tril,
    "avg_pool1d": pool.avg_pool, "avg_pool2d": pool.avg_pool, "avg_pool3d": pool.avg_pool,
    "max_pool2d_with_indices": pool.max_pool_with_indices, "max_pool3d_with_indices": pool.max_pool_with_indices,
    "upsample_nearest1d": d.upsample_nearest, "upsample_nearest2d": d.upsample_nearest,
    "upsample_nearest3d": d.upsample_nearest, "upsample_bilinear2d": d.upsample_bilinear2d,
    "upsample_bicubic2d": upsample_bicubic2d, "gather": gather,
    "_adaptive_avg_pool2d": adaptive_avg_pool, "_adaptive_avg_pool3d": adaptive_avg_pool,
    "convolution": d.convolution, "_convolution": d.convolution,
    "sum": d.sum_, "mean": d.mean, "amax": d.amax, "amin": d.amin,
    **POINTWISE_DECOMPOSED,
}
_DECOMPOSED_INPLACE: dict[str, Callable] = {"index_put": d.index_put_, "_unsafe_index_put": d.index_put_}
# Ops whose output shape depends on the values they read: a kernel must allocate its
# outputs before it reads any data, so these cannot be compiled.
_DYNAMIC = {"nonzero", "nonzero_static", "argwhere", "masked_select", "unique", "_unique", "_unique2", "unique_dim",
            "unique_consecutive"}


def _lowering(entries: list[OpDef]) -> list[OpDef]:
    return [replace(e, prim=_PRIMS.get(e.name), decompose=_DECOMPOSED.get(e.name),
                    decompose_inplace=_DECOMPOSED_INPLACE.get(e.name), dynamic_shape=e.name in _DYNAMIC)
            for e in entries]


OPS: dict[str, OpDef] = _table(_lowering(_ELEMENTWISE + _ROW + _CUBE + _FORMULA_ONLY + _FREE))

# The op sets other layers ask about, derived from the table.
MATMUL_OPS = frozenset(n for n, e in OPS.items() if e.cost_class is C.MATMUL)
CUBE_OPS = frozenset(n for n, e in OPS.items() if e.cube is not None)
ROW_OPS = frozenset(n for n, e in OPS.items() if e.row is not None)
FREE_OPS = frozenset(n for n, e in OPS.items() if e.free)


def base_name(name: str) -> str:
    """The op an in-place variant belongs to: add_ -> add (private names keep their underscore)."""
    return name[:-1] if name.endswith("_") and not name.startswith("_") else name


def op_def(name: str) -> OpDef | None:
    """The entry of an aten overload packet name, in-place variants included."""
    return OPS.get(base_name(name))


# Decompositions of ops outside aten ("namespace::name" -> a torch body), registered by the
# package that defines the op: the torch_npu stand-ins (sage.bench.torch_npu_standin) give
# their documented composite bodies, so the compiler records those while the reference
# model, which traces without decomposing, still sees the one fused operator.
_EXTENSION_DECOMPOSITIONS: dict[str, Callable] = {}


def register_extension_decomposition(qualname: str, body: Callable) -> None:
    if "::" not in qualname or qualname.startswith("aten::"):
        raise ValueError(f"{qualname!r}: extension decompositions are for ops outside aten, as 'namespace::name'")
    _EXTENSION_DECOMPOSITIONS[qualname] = body


def extension_decomposition(qualname: str) -> Callable | None:
    return _EXTENSION_DECOMPOSITIONS.get(qualname)


def is_free(name: str) -> bool:
    """A view or allocation: no kernel launch (in-place variants of views included)."""
    return name in FREE_OPS or (name.endswith("_") and name[:-1] in FREE_OPS)


def ops_in(cost_class: CostClass) -> frozenset[str]:
    return frozenset(n for n, e in OPS.items() if e.cost_class is cost_class)


def broadcasts(call: AtenCall) -> bool:
    """Some tensor operand is spread over more output elements than it has (not a scalar)."""
    if not call.outputs:
        return False
    n = call.outputs[0].numel
    return any(1 < t.numel < n for t in call.inputs)


def cost_class_of(call: AtenCall) -> CostClass:
    """The class an eager call is timed in. An op the registry does not list is classed by
    its shapes: elementwise when its output is at least as big as every input, else a copy."""
    entry = op_def(call.name)
    if entry is None or entry.cost_class is None:
        out_n = call.outputs[0].numel if call.outputs else 0
        big = bool(call.outputs and call.inputs and out_n >= max(t.numel for t in call.inputs))
        return C.ELEMENTWISE if big else C.COPY
    if entry.cost_class is C.ELEMENTWISE and broadcasts(call):
        return C.BROADCAST
    return entry.cost_class
