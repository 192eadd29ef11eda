"""Attention probabilities with logit soft-capping (Gemma 2) and a given dropout mask."""

import torch

DESCRIPTION = (
    "scores [B, H, Sq, Sk], dropout_mask [B, H, Sq, Sk] bool (True = keep), softcap > 0, "
    "dropout_p in [0, 1). capped = softcap * tanh(scores / softcap); p = softmax(capped) "
    "over Sk (fp32); out = p * dropout_mask / (1 - dropout_p), in scores' dtype."
)
TAGS = ["softmax", "attention", "elementwise", "dropout"]


class Model(torch.nn.Module):
    def forward(self, scores, dropout_mask, softcap: float, dropout_p: float):
        capped = softcap * torch.tanh(scores.float() / softcap)
        probs = torch.softmax(capped, dim=-1)
        return (probs * dropout_mask / (1 - dropout_p)).to(scores.dtype)


def get_init_inputs():
    return []


# (dtype, B, H, Sq, Sk, softcap, dropout_p)
_CASES = [
    (torch.float32, 2, 8, 256, 256, 50.0, 0.1),
    (torch.bfloat16, 1, 16, 512, 512, 50.0, 0.0),
    (torch.float16, 4, 4, 128, 301, 30.0, 0.25),
]


def _case(dtype, b, h, sq, sk, softcap, dropout_p):
    scores = (torch.randn(b, h, sq, sk) * 20).to(dtype)
    keep = torch.rand(b, h, sq, sk) >= dropout_p
    return [scores, keep, softcap, dropout_p]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
