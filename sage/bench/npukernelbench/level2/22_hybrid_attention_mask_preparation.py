"""Build the boolean attention mask of a hybrid prefix-LM / sliding-window causal model."""

import torch

DESCRIPTION = (
    "padding_mask [B, S] bool (True = real token, right padding), prefix_lens [B] int64 "
    "(length of the bidirectional prefix, e.g. image + prompt tokens, <= number of real "
    "tokens), sliding_window int >= 1. allowed[b, 0, i, j] = padding_mask[b, j] and "
    "((j <= i and i - j < sliding_window) or (i < prefix_lens[b] and j < prefix_lens[b])). "
    "Returns allowed [B, 1, S, S] bool."
)
TAGS = ["mask", "elementwise", "attention", "broadcast"]


class Model(torch.nn.Module):
    def forward(self, padding_mask, prefix_lens, sliding_window: int):
        s = padding_mask.shape[1]
        i = torch.arange(s)[:, None]
        j = torch.arange(s)[None, :]
        causal_window = (j <= i) & (i - j < sliding_window)
        prefix = prefix_lens[:, None, None]
        bidirectional = (i < prefix) & (j < prefix)
        allowed = (causal_window | bidirectional) & padding_mask[:, None, :]
        return allowed[:, None]


def get_init_inputs():
    return []


# (B, S, sliding_window)
_CASES = [
    (2, 1024, 256),
    (4, 301, 64),
    (1, 2048, 4096),
]


def _case(b, s, window):
    lengths = torch.randint(s // 2, s + 1, (b,))
    lengths[0] = s
    padding_mask = torch.arange(s)[None, :] < lengths[:, None]
    prefix_lens = (torch.rand(b) * lengths * 0.5).to(torch.int64)
    return [padding_mask, prefix_lens, window]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
