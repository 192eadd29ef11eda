import torch

DESCRIPTION = (
    "Gradient of an embedding lookup with respect to its (num_weights, D) table, as aten "
    "embedding_dense_backward: grad_output rows are summed into the rows named by indices; the padding_idx "
    "row (if >= 0) stays zero; with scale_grad_by_freq each contribution is divided by its index's count. "
    "Inputs: grad_output (..., D), int64 indices (...), num_weights, padding_idx, scale_grad_by_freq. "
    "Sums are accumulated in float32."
)
TAGS = ["backward", "index", "scatter"]
# The public reference is one aten op (embedding_dense_backward), one torch_npu kernel. This CPU reference
# spells it out to accumulate half-precision gradients in float32 (CPU's kernel sums in half precision).
FUSED_OP = "aclnnEmbeddingDenseBackward"


class Model(torch.nn.Module):
    def forward(self, grad_output, indices, num_weights, padding_idx, scale_grad_by_freq):
        dim = grad_output.shape[-1]
        flat_indices = indices.reshape(-1)
        grad = grad_output.reshape(-1, dim).float()
        if scale_grad_by_freq:
            counts = torch.bincount(flat_indices, minlength=num_weights)
            grad = grad / counts[flat_indices].unsqueeze(1)
        grad_weight = torch.zeros(num_weights, dim, dtype=torch.float32)
        grad_weight.index_add_(0, flat_indices, grad)
        if padding_idx >= 0:
            grad_weight[padding_idx] = 0.0
        return grad_weight.to(grad_output.dtype)


_CASES = [
    ((8, 512), 301, torch.float32, 10000, -1, False),
    ((16, 256), 768, torch.float16, 4000, 0, False),
    ((2048,), 2117, torch.bfloat16, 1000, 3, True),
    ((4, 1024), 64, torch.float32, 50, -1, True),
]


def _case(index_shape, dim, dtype, num_weights, padding_idx, scale_grad_by_freq):
    grad_output = torch.randn(*index_shape, dim).to(dtype)
    indices = torch.randint(0, num_weights, index_shape)
    return [grad_output, indices, num_weights, padding_idx, scale_grad_by_freq]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
