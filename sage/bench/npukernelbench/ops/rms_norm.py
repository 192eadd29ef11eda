import torch

DESCRIPTION = (
    "RMS normalisation over the last dimension: x / sqrt(mean(x^2) + eps) * weight, computed in float32 and "
    "returned in the input dtype. Inputs: x, weight (last-dim sized), python float eps."
)
TAGS = ["norm", "reduction"]
FUSED_OP = "torch_npu.npu_rms_norm"


class Model(torch.nn.Module):
    def forward(self, x, weight, eps):
        xf = x.float()
        inv_rms = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
        return (xf * inv_rms * weight.float()).to(x.dtype)


_CASES = [
    ((4096, 1024), torch.float32, 1e-6),
    ((4096, 1024), torch.float16, 1e-6),
    ((1000, 301), torch.bfloat16, 1e-5),
    ((64, 2117), torch.float32, 1e-6),
]


def _case(shape, dtype, eps):
    x = (torch.randn(shape) * 2.0).to(dtype)
    weight = (1.0 + 0.5 * torch.randn(shape[-1])).to(dtype)
    return [x, weight, eps]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
