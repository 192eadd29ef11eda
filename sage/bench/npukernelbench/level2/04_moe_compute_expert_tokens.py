"""Cumulative token count per expert, as torch_npu.npu_moe_compute_expert_tokens."""

import torch

DESCRIPTION = (
    "npu_moe_compute_expert_tokens: sorted_expert_for_source_row [N] int32 (expert id of "
    "each expanded row, sorted ascending, values in [0, num_expert)) -> "
    "total_rows_before_expert [num_expert] int32, where entry e is the number of rows whose "
    "expert id is <= e (the end offset of expert e's rows; experts with no rows repeat the "
    "previous value)."
)
TAGS = ["index", "histogram", "scan", "moe"]
FUSED_OP = "torch_npu.npu_moe_compute_expert_tokens"


class Model(torch.nn.Module):
    def forward(self, sorted_expert_for_source_row: torch.Tensor, num_expert: int) -> torch.Tensor:
        counts = torch.bincount(sorted_expert_for_source_row.long(), minlength=num_expert)
        return counts.cumsum(0).to(torch.int32)


def get_init_inputs():
    return []


# (rows, num_expert, experts actually used)
_CASES = [
    (8192, 64, 64),
    (2408, 8, 8),
    (40000, 256, 200),
]


def _case(rows, num_expert, used):
    # Some experts receive no tokens in the last case: their entries must repeat.
    chosen = torch.randperm(num_expert)[:used]
    ids = chosen[torch.randint(0, used, (rows,))]
    return [torch.sort(ids).values.to(torch.int32), num_expert]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
