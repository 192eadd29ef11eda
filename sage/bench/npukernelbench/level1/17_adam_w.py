import torch

DESCRIPTION = (
    "One AdamW optimizer step (decoupled weight decay, bias-corrected moments, as torch.optim.AdamW): "
    "inputs param, grad, exp_avg, exp_avg_sq, step (the step number after this update, >= 1), lr, beta1, beta2, "
    "eps, weight_decay; returns the updated (param, exp_avg, exp_avg_sq), computed in float32."
)
TAGS = ["optimizer", "elementwise"]
FUSED_OP = "torch_npu.npu_apply_adam_w"


class Model(torch.nn.Module):
    def forward(self, param, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay):
        p = param.float() * (1.0 - lr * weight_decay)
        g = grad.float()
        m = exp_avg.float() * beta1 + g * (1.0 - beta1)
        v = exp_avg_sq.float() * beta2 + g * g * (1.0 - beta2)
        bias_correction1 = 1.0 - beta1**step
        bias_correction2 = 1.0 - beta2**step
        denom = torch.sqrt(v) / (bias_correction2**0.5) + eps
        p = p - (lr / bias_correction1) * (m / denom)
        return p.to(param.dtype), m.to(exp_avg.dtype), v.to(exp_avg_sq.dtype)


_CASES = [
    ((1024, 1024), torch.float32, 1, 1e-3, 0.9, 0.999, 1e-8, 0.01),
    ((4096, 301), torch.float32, 10, 3e-4, 0.9, 0.95, 1e-8, 0.1),
    ((512, 2117), torch.bfloat16, 1000, 1e-4, 0.9, 0.999, 1e-6, 0.05),
    ((1000, 301), torch.float16, 5, 1e-3, 0.8, 0.99, 1e-4, 0.0),
]


def _case(shape, dtype, step, lr, beta1, beta2, eps, weight_decay):
    param = torch.randn(shape).to(dtype)
    grad = (torch.randn(shape) * 0.1).to(dtype)
    exp_avg = (torch.randn(shape) * 0.01).to(dtype)
    exp_avg_sq = (torch.rand(shape) * 1e-3 + 1e-5).to(dtype)
    return [param, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
