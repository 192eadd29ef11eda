"""Single-layer LSTM over a sequence, with explicit weights (PyTorch gate order i, f, g, o)."""

import torch

DESCRIPTION = (
    "LSTM, one layer, unidirectional: x [T, B, I], h0, c0 [B, H], w_ih [4H, I], w_hh [4H, H], "
    "b_ih, b_hh [4H]. For each t: gates = x_t w_ih^T + b_ih + h w_hh^T + b_hh split into "
    "i, f, g, o (in that order); c = sigmoid(f) * c + sigmoid(i) * tanh(g); "
    "h = sigmoid(o) * tanh(c). Returns (y [T, B, H] = h at every step, h_T, c_T), fp32 "
    "math, outputs in x's dtype (same as torch.nn.LSTM)."
)
TAGS = ["rnn", "matmul", "elementwise", "scan"]
# The public reference calls this one torch_npu operator: the vendor runs one fused kernel.
FUSED_OP = "torch_npu.npu_lstm"


class Model(torch.nn.Module):
    def forward(self, x, h0, c0, w_ih, w_hh, b_ih, b_hh):
        steps = x.shape[0]
        # The input projection has no recurrence: one matmul for all steps.
        x_proj = torch.matmul(x.float(), w_ih.float().T) + b_ih.float() + b_hh.float()
        w_hh_t = w_hh.float().T
        h, c = h0.float(), c0.float()
        ys = []
        for t in range(steps):
            gates = x_proj[t] + h @ w_hh_t
            i, f, g, o = gates.chunk(4, dim=-1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            ys.append(h)
        dtype = x.dtype
        return torch.stack(ys).to(dtype), h.to(dtype), c.to(dtype)


def get_init_inputs():
    return []


# (dtype, T, B, I, H)
_CASES = [
    (torch.float32, 128, 8, 256, 256),
    (torch.float16, 64, 4, 301, 512),
    (torch.float32, 256, 2, 64, 128),
]


def _case(dtype, t, b, i, h):
    bound = h**-0.5  # torch.nn.LSTM's initialisation range
    def uniform(*shape):
        return ((torch.rand(*shape) * 2 - 1) * bound).to(dtype)
    return [
        torch.randn(t, b, i).to(dtype),
        (0.5 * torch.randn(b, h)).to(dtype),
        (0.5 * torch.randn(b, h)).to(dtype),
        uniform(4 * h, i),
        uniform(4 * h, h),
        uniform(4 * h),
        uniform(4 * h),
    ]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
