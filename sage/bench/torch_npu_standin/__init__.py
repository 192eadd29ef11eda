"""CPU stand-ins for torch_npu's fused operators, for running public task references that
`import torch_npu` on a machine without an NPU (docs/tasks.md, "torch_npu stand-ins").

This package is what such a task file gets as `torch_npu` (sage.bench.torch_npu_hook) when
no real torch_npu is importable. Each `npu_*` op is a torch.library custom op in the
`npu_standin` namespace (`_op.py`), written from the op's torch_npu documentation (cited in
its docstring and in docs/tasks.md) and tested against an independent composite
implementation (tests/bench/test_torch_npu_standin*.py). The reference model times each as
the one fused kernel it is on the chip (sage.bench.reference.standin_work). It is for the
reference only: a kernel's sandbox admits no import but the DSL and math.
"""

from __future__ import annotations

from sage.bench.torch_npu_standin.attention import npu_fused_infer_attention_score, npu_fusion_attention
from sage.bench.torch_npu_standin.attention_sparse import npu_lightning_indexer, npu_sparse_flash_attention
from sage.bench.torch_npu_standin.matmul import (npu_ffn, npu_grouped_matmul_swiglu_quant_v2, npu_quant_matmul,
                                                 npu_quant_matmul_reduce_sum, npu_weight_quant_batchmatmul)
from sage.bench.torch_npu_standin.misc import npu_advance_step_flashattn, npu_apply_adam, npu_iou, npu_top_k_top_p
from sage.bench.torch_npu_standin.moe import (npu_moe_compute_expert_tokens, npu_moe_finalize_routing,
                                              npu_moe_gating_top_k_softmax, npu_moe_init_routing)
from sage.bench.torch_npu_standin.quant import (npu_dequant_swiglu_quant, npu_dynamic_quant, npu_quant_scatter,
                                                npu_swiglu_quant)
from sage.bench.torch_npu_standin.rope_norm import npu_group_norm_swish, npu_interleave_rope, npu_rotary_mul

STANDIN = True        # a task (or test) can tell the stand-in from the real module

__all__ = ["npu_advance_step_flashattn", "npu_apply_adam", "npu_dequant_swiglu_quant", "npu_dynamic_quant", "npu_ffn",
           "npu_fused_infer_attention_score", "npu_fusion_attention",
           "npu_group_norm_swish", "npu_grouped_matmul_swiglu_quant_v2", "npu_interleave_rope", "npu_iou", "npu_lightning_indexer",
           "npu_moe_compute_expert_tokens", "npu_moe_finalize_routing", "npu_moe_gating_top_k_softmax",
           "npu_moe_init_routing", "npu_quant_matmul", "npu_quant_matmul_reduce_sum", "npu_quant_scatter",
           "npu_rotary_mul", "npu_sparse_flash_attention", "npu_swiglu_quant", "npu_top_k_top_p", "npu_weight_quant_batchmatmul"]


# Ops whose integer outputs are quantised codes, round(y / scale) or round(y * scale) of float
# math: a task whose reference calls one is judged as a task tagged `quant` (its codes may
# differ by one step; docs/evaluation.md, "One exception, and why").
QUANTISING = frozenset({"npu_dequant_swiglu_quant", "npu_dynamic_quant", "npu_grouped_matmul_swiglu_quant_v2",
                        "npu_quant_matmul", "npu_quant_scatter", "npu_swiglu_quant"})


def provides(name: str) -> bool:
    """Whether the stand-in has `torch_npu.<name>`."""
    return name in __all__
