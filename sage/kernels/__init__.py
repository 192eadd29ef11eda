"""The op layer between the machine (`sage.npu`) and its users (`sage.bench`, `sage.agent`).

- the op registry (`registry`): every aten operator the project understands, one entry
  each: its cost class, roofline work rule, semantics and how it lowers;
- the vector ops of elementwise chains with their instruction recipes (`vector_ops`), the
  chain expressions (`chain`) and their lowering to DSL instructions (`lowering`);
- the torch-dispatch recorder (`record`): the aten calls of a forward and their dataflow;
- the expert kernel library (`library`): source generators for elementwise chains, row
  kernels and matmul, sized by a `Target` read from a hardware preset.

Users import the names below; the submodules are the implementation.
"""

from sage.kernels.aten_chain import ChainPlan, call_chain, chain_for
from sage.kernels.aten_rules import chain_ctx as chain_context
from sage.kernels.chain import Const, Expr, Inp, Kind, Op, Reduce, const, inp, op, render
from sage.kernels.layout import broadcast_layout, grouped_layout
from sage.kernels.library import (
    HEADER, KERNEL_DTYPES, LIB_DTYPES, REDUCTIONS, VENDOR_CUBE_KNOBS, VENDOR_KNOBS, CubeKnobs, ElementwiseSpec, Knobs,
    MatmulSpec, RowSpec, dsl_dtype, elementwise_source, suffixed, elementwise_tiling, matmul_source, row_source, row_tiling,
)
from sage.kernels.library.tile import TileGeometry, TileTooBig, tile_args, tile_geometry, tile_source
from sage.kernels.library.mm import MatOperand, MmOut, MmSpec, mm_args, mm_source
from sage.kernels.library.tile_spec import Access, Iota, TileOutput, TileSpec
from sage.kernels.library.tile_spec import load_plan as tile_load_plan
from sage.kernels.long_rows import LONG_ROW_LIMITS, long_rows
from sage.kernels.compact import compact_programs
from sage.kernels.lowering import Lowerer, Val
from sage.kernels.record import (
    AtenCall, Graph, Node, TensorMeta, TooManyLaunches, dtype_size, flat_args, is_tensor_list, record_aten,
    record_forward, trace_graph,
)
from sage.kernels.registry import (
    CUBE_OPS, FREE_OPS, MATMUL_OPS, OPS, ROW_OPS, ChainForm, CostClass, CubeForm, OpDef, Prim, Promotion, RowForm,
    WorkRule,
    base_name, broadcasts, cost_class_of, extension_decomposition, is_free, op_def, ops_in,
    register_extension_decomposition,
)
from sage.kernels.target import Target, target_for, target_of
from sage.kernels.vector_ops import VECTOR_OPS, VectorOp

__all__ = [
    "Access", "Iota", "MatOperand", "MmOut", "MmSpec", "Prim", "mm_args", "mm_source", "Reduce", "TileGeometry", "TileOutput", "TileSpec", "TileTooBig", "chain_context",
    "LONG_ROW_LIMITS", "long_rows", "compact_programs", "tile_args", "tile_geometry",
    "tile_load_plan",
    "tile_source",
    "CUBE_OPS", "FREE_OPS", "HEADER", "KERNEL_DTYPES", "LIB_DTYPES", "MATMUL_OPS", "OPS", "REDUCTIONS", "ROW_OPS",
    "VECTOR_OPS", "VENDOR_CUBE_KNOBS", "VENDOR_KNOBS",
    "AtenCall", "ChainForm", "ChainPlan", "Const", "CostClass", "CubeForm", "CubeKnobs", "ElementwiseSpec", "Expr",
    "Graph", "Inp", "Kind", "Knobs", "Lowerer", "MatmulSpec", "Node", "Op", "OpDef", "Promotion", "RowForm",
    "RowSpec", "Target", "TensorMeta", "Val", "VectorOp", "WorkRule",
    "base_name", "broadcast_layout", "broadcasts", "call_chain", "chain_for", "const", "cost_class_of", "dsl_dtype",
    "dtype_size", "elementwise_source", "flat_args", "is_tensor_list", "elementwise_tiling", "grouped_layout", "inp", "is_free", "matmul_source",
    "op", "op_def", "ops_in", "extension_decomposition", "register_extension_decomposition", "record_aten", "record_forward", "TooManyLaunches", "render", "row_source", "row_tiling", "suffixed", "target_for",
    "target_of", "trace_graph",
]
