import torch
import torch.nn.functional as F

DESCRIPTION = (
    "Negative log-likelihood loss (F.nll_loss) of log-probabilities (N, C[, d]) against int64 class targets, "
    "with per-class weights and ignore_index; reduction 'mean' (weighted mean over non-ignored targets), "
    "'sum' or 'none'. Inputs: log_probs, target, weight, reduction, ignore_index."
)
TAGS = ["loss", "reduction", "index"]


class Model(torch.nn.Module):
    def forward(self, log_probs, target, weight, reduction, ignore_index):
        return F.nll_loss(log_probs, target, weight=weight, ignore_index=ignore_index, reduction=reduction)


_CASES = [
    ((4096, 1000), torch.float32, "sum", -100),
    # Half-precision cases keep per-element losses: torch reduces a half loss in the half
    # type, so its scalar can sit ulps away from the exact mean (a bf16 mean of 9.613 came
    # out 9.5) and a correct fp32-accumulating kernel would be judged wrong against it.
    ((8192, 301), torch.float16, "none", -100),
    ((1024, 2117), torch.bfloat16, "none", 0),
    ((16, 301, 64), torch.float32, "mean", -100),
]


def _case(shape, dtype, reduction, ignore_index):
    classes = shape[1]
    log_probs = torch.log_softmax(torch.randn(shape) * 2.0, dim=1).to(dtype)
    target_shape = (shape[0], *shape[2:])
    target = torch.randint(0, classes, target_shape)
    # About 5% of the targets are ignored (ignore_index may also be a real class, e.g. 0).
    target = torch.where(torch.rand(target_shape) < 0.05, torch.full(target_shape, ignore_index), target)
    weight = (0.5 + torch.rand(classes)).to(dtype)
    return [log_probs, target, weight, reduction, ignore_index]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
