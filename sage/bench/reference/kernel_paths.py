"""Which device kernels torch_npu launches for an aten call, and on which unit (AI core or AI CPU).

The eager chain (`chain.py`) times one AI-core kernel per non-view aten call. That is the
default, and right for most calls; `PATHS` lists the cited exceptions on a 910B:

- **AI CPU fallbacks**: CANN's op_api layer (`l0op::<Op>`) checks the dtype against the
  list of dtypes its AI-core kernel takes on the chip (`AICORE910B_DTYPE_SUPPORT_LIST` and
  kin, keyed on the 910B's `SocVersion::ASCEND910B` / `NpuArch::DAV_2201`) and otherwise
  launches the op's AI CPU kernel (`ADD_TO_LAUNCHER_LIST_AICPU`). `aicore_dtypes` copies
  that list; an AI CPU kernel is timed by `aicpu.py`, not by the AI-core model.
- **Casts before the kernel** (multi-kernel paths): the aclnn layer casts an input to the
  dtype the kernel runs in (`l0op::Cast`, one AI-core Cast kernel, none when the dtype
  already matches: ops-math math/cast/op_api/cast.cpp returns `self` then). `cast_to` says
  to which dtype ("output": the call's result dtype; or a dtype name) and `cast_inputs`
  which tensor inputs.

A row matches on the aten base name; `dtype_of` says whose dtype (after the casts) picks the
unit. An op without a row is `DEFAULT`: one AI-core kernel, "default, no cited exception".
`benchmarks/kernel_paths.py` lists every (op, dtypes) the suite and the public files trace,
with its path (docs/kernel_paths.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict

from sage.kernels import AtenCall, TensorMeta, base_name

OPS_MATH = "https://github.com/hicann/ops-math/blob/c41933244c31e44fd496e3bb3212164f8c48c214/"
OP_PLUGIN = "https://github.com/Ascend/op-plugin/blob/517f2e7d0f202f38b76310706cb977ca2388ad21/"
PR_818 = "https://github.com/flagos-ai/FlagGems-vllm/pull/818"
# A profiler trace (kernel_details.csv) of torch_npu on an Ascend 910B3, CANN 8.5.1: INT32
# Cumsum -> aclnnCumsum_CumsumAiCore_Cumsum, INT64 Cumsum -> aclnnCumsum_CumsumAiCpu_Cumsum;
# INT32 / INT64 stable Sort -> AICPU, FP32 stable Sort -> AI Core.
PYG_TRACE = "https://github.com/wio1997/nanwang/tree/main/pyg-ascend-compat"


class Unit(StrEnum):
    AICORE = "aicore"
    AICPU = "aicpu"


class PathRule(BaseModel):
    """One cited exception to "one AI-core kernel per aten call"."""

    model_config = ConfigDict(frozen=True)

    id: str
    aten: str                                   # aten base name ("cumsum", "sort", ...)
    kernel: str                                 # CANN kernel name, e.g. "Cumsum"
    aicore_dtypes: frozenset[str] | None = None  # None: the kernel is always on the AI core
    dtype_of: Literal["input", "output"] = "input"   # whose dtype (after the casts) is checked
    cast_to: str | None = None                  # "output" or a dtype name: inputs cast to it first
    cast_inputs: Literal["first", "all"] = "first"
    # (overload, ((scalar value, kernel), ...)): the kernel picked by the call's first scalar argument
    # (pow's exponent); other values take `kernel`
    scalar_kernels: tuple[str, tuple[tuple[float, str], ...]] | None = None
    sources: tuple[str, ...]                    # where the rule is read (CANN op_api, torch_npu, traces)
    cost_source: str = ""                       # where an AI CPU kernel's time comes from
    note: str = ""


_F = frozenset
PATHS: tuple[PathRule, ...] = (
    PathRule(id="cumsum", aten="cumsum", kernel="Cumsum", dtype_of="output", cast_to="output",
             aicore_dtypes=_F({"float32", "float16", "bfloat16", "int32"}),
             sources=(OPS_MATH + "math/cumsum/op_api/cumsum.cpp", OPS_MATH + "math/cumsum/op_api/aclnn_cumsum.cpp",
                      OP_PLUGIN + "op_plugin/ops/opapi/CumsumKernelNpuOpApi.cpp", PYG_TRACE),
             cost_source=PR_818,
             note="aclnnCumsum casts self to the output dtype first; torch_npu gives an integer input an "
                  "int64 result (kLong), so int32 -> Cast + CumsumAiCpu(int64)"),
    PathRule(id="sort", aten="sort", kernel="Sort", aicore_dtypes=_F({"float32", "float16", "bfloat16"}),
             sources=(OPS_MATH + "math/sort/op_api/sort.cpp", PYG_TRACE), cost_source=PR_818,
             note="integer sorts (argsort included) take SortAiCpu; no public time of it: the cumsum fit"),
    PathRule(id="topk", aten="topk", kernel="TopKV2", aicore_dtypes=_F({"float32", "float16", "bfloat16"}),
             sources=(OPS_MATH + "math/topk/op_api/topk.cpp",), cost_source=PR_818,
             note="910B: CURRENT_DTYPE_SUPPORT_LIST; integer values take the AI CPU TopK"),
    PathRule(id="mul", aten="mul", kernel="Mul",
             aicore_dtypes=_F({"float32", "float16", "int32", "int8", "uint8", "int64", "bfloat16", "complex64",
                               "bool"}),
             sources=(OPS_MATH + "math/mul/op_api/mul.cpp",), cost_source=PR_818,
             note="int16 and complex128 take MulAiCpu"),
    PathRule(id="eq", aten="eq", kernel="Equal",
             aicore_dtypes=_F({"float32", "int32", "int64", "float16", "int8", "uint8", "bool", "bfloat16"}),
             sources=(OPS_MATH + "math/equal/op_api/equal.cpp",), cost_source=PR_818,
             note="int16 and complex take the AI CPU Equal"),
    PathRule(id="equal", aten="equal", kernel="TensorEqual",
             aicore_dtypes=_F({"float32", "int32", "float16", "int8", "uint8", "bool", "bfloat16"}),
             sources=(OPS_MATH + "math/tensor_equal/op_api/tensor_equal.cpp",), cost_source=PR_818,
             note="torch.equal: the 910B uses the AICORE910 list, so int64 and int16 take TensorEqualAiCpu"),
    PathRule(id="pow", aten="pow", kernel="Pow",
             scalar_kernels=("Tensor_Scalar", ((0.5, "Pows"), (2.0, "Pows"), (3.0, "Pows"), (-0.5, "Pows"),
                                               (-1.0, "Pows"), (-2.0, "Pows"), (1.0, "ViewCopy"))),
             sources=(OPS_MATH + "math/pow/op_api/aclnn_pow.cpp",),
             note="aclnnPowTensorScalar: exponents 0.5, 2, 3, -0.5, -1, -2 of a float tensor take the Pows kernel, "
                  "1 no arithmetic, any other the generic Pow kernel; one AI-core kernel either way, timed alike "
                  "(the only public figure of the generic path, FlagGems PR 6014, times a whole torch.dist)"),
    PathRule(id="logical_and", aten="logical_and", kernel="LogicalAnd", cast_to="bool", cast_inputs="all",
             sources=(OPS_MATH + "math/logical_and/op_api/aclnn_logical_and.cpp",
                      OP_PLUGIN + "op_plugin/ops/aclops/LogicalAndKernelNpu.cpp"),
             note="every non-bool input is cast to bool first (one Cast kernel each)"),
    PathRule(id="logical_or", aten="logical_or", kernel="LogicalOr", cast_to="bool", cast_inputs="all",
             sources=(OPS_MATH + "math/logical_or/op_api/aclnn_logical_or.cpp",),
             note="the uncast path is for RegBase chips only; on a 910B both inputs are cast to bool"),
    PathRule(id="logical_not", aten="logical_not", kernel="LogicalNot", cast_to="bool",
             sources=(OPS_MATH + "math/logical_not/op_api/aclnn_logical_not.cpp",),
             note="the input is cast to bool first"),
)
RULES: dict[str, PathRule] = {r.aten: r for r in PATHS}


# Dataclasses, not models: every call of a forward (tens of thousands for nms) gets a path, and
# a pydantic model costs tens of µs each to build; they stay inside the reference package.
@dataclass(slots=True)
class PathKernel:
    """One device kernel of a path: its unit, its CANN name and the call whose work it does."""

    name: str
    unit: Unit
    call: AtenCall
    cast_of: int | None = None       # a Cast kernel: which input of the aten call it converts


@dataclass(slots=True)
class KernelPath:
    rule: str                        # the PATHS id, or "default"
    kernels: list[PathKernel]
    sources: tuple[str, ...] = ()

    @property
    def units(self) -> str:
        return "+".join(dict.fromkeys(k.unit.value for k in self.kernels))

    @property
    def default(self) -> bool:
        return self.rule == "default"


DEFAULT_NOTE = "default, no cited exception"


def path_of(call: AtenCall) -> KernelPath:
    """The kernels torch_npu launches for `call`, in order (the last one is the op's own)."""
    rule = RULES.get(base_name(call.name))
    if rule is None or not call.inputs:
        return default_path(call)
    kernels: list[PathKernel] = []
    inputs = list(call.inputs)
    if rule.cast_to is not None and call.outputs:
        target = call.outputs[0].dtype if rule.cast_to == "output" else rule.cast_to
        for i in range(len(inputs) if rule.cast_inputs == "all" else 1):
            if inputs[i].dtype != target:
                kernels.append(PathKernel(name="Cast", unit=Unit.AICORE, call=cast_call(inputs[i], target), cast_of=i))
                inputs[i] = inputs[i].model_copy(update={"dtype": target, "origin": None})
    checked = call.outputs[0].dtype if rule.dtype_of == "output" and call.outputs else inputs[0].dtype
    on_core = rule.aicore_dtypes is None or checked in rule.aicore_dtypes
    main = call if inputs == list(call.inputs) else call.model_copy(update={"inputs": inputs})
    kernels.append(PathKernel(name=_kernel_name(rule, call) + ("" if on_core else "AiCpu"),
                              unit=Unit.AICORE if on_core else Unit.AICPU, call=main))
    return KernelPath(rule=rule.id, kernels=kernels, sources=rule.sources)


def _kernel_name(rule: PathRule, call: AtenCall) -> str:
    if rule.scalar_kernels is None or call.overload != rule.scalar_kernels[0] or not call.scalars:
        return rule.kernel
    value = call.scalars[0]
    return next((k for v, k in rule.scalar_kernels[1] if isinstance(value, (int, float)) and float(value) == v),
                rule.kernel)


def default_path(call: AtenCall) -> KernelPath:
    """One AI-core kernel doing the call's work."""
    return KernelPath(rule="default", kernels=[PathKernel(name=call.name, unit=Unit.AICORE, call=call)])


def cast_call(t: TensorMeta, dtype: str) -> AtenCall:
    """The aten form of one CANN Cast kernel: `_to_copy` of `t` to `dtype`."""
    out = TensorMeta(shape=t.shape, dtype=dtype)
    return AtenCall(name="_to_copy", overload="default", inputs=[t], outputs=[out], scalars=[],
                    kwargs={"dtype": dtype}, arg_kinds=["tensor"])


def aicpu_elements(call: AtenCall) -> int:
    """The elements an AI CPU kernel walks: those of its largest tensor."""
    return max((t.numel for t in [*call.inputs, *call.outputs]), default=0)
