"""RWKV-4 WKV recurrence with exponential time decay, evaluated with the max-shift
(log-sum-exp) stabilisation of the reference CUDA kernel."""

import torch

DESCRIPTION = (
    "time_decay, time_first [C] fp32, k, v [B, T, C]. w = -exp(time_decay), u = time_first. "
    "State per (b, c): aa = bb = 0, pp = -1e38. For t = 0..T-1 (fp32): ww = u + k_t; "
    "p = max(pp, ww); e1 = exp(pp - p); e2 = exp(ww - p); y_t = (e1*aa + e2*v_t) / "
    "(e1*bb + e2); then ww = pp + w; p = max(ww, k_t); e1 = exp(ww - p); e2 = exp(k_t - p); "
    "aa = e1*aa + e2*v_t; bb = e1*bb + e2; pp = p. Returns y [B, T, C] in v's dtype. "
    "Mathematically y_t = (sum_{i<t} e^{(t-1-i)w + k_i} v_i + e^{u + k_t} v_t) / "
    "(same without v)."
)
TAGS = ["scan", "rnn", "elementwise"]


class Model(torch.nn.Module):
    def forward(self, time_decay, time_first, k, v):
        w = -torch.exp(time_decay.float())
        u = time_first.float()
        kf, vf = k.float(), v.float()
        b, t, c = kf.shape
        aa = torch.zeros(b, c)
        bb = torch.zeros(b, c)
        pp = torch.full((b, c), -1e38)
        out = torch.empty(b, t, c)
        for i in range(t):
            kk, vv = kf[:, i], vf[:, i]
            ww = u + kk
            p = torch.maximum(pp, ww)
            e1, e2 = torch.exp(pp - p), torch.exp(ww - p)
            out[:, i] = (e1 * aa + e2 * vv) / (e1 * bb + e2)
            ww = pp + w
            p = torch.maximum(ww, kk)
            e1, e2 = torch.exp(ww - p), torch.exp(kk - p)
            aa = e1 * aa + e2 * vv
            bb = e1 * bb + e2
            pp = p
        return out.to(v.dtype)


def get_init_inputs():
    return []


# (dtype, B, T, C)
_CASES = [
    (torch.float32, 2, 256, 768),
    (torch.bfloat16, 4, 128, 1024),
    (torch.float16, 1, 301, 512),
]


def _case(dtype, b, t, c):
    # RWKV-4 initialisation ranges: decays spread over several orders of magnitude.
    time_decay = torch.linspace(-5, 3, c) + 0.1 * torch.randn(c)
    time_first = torch.log(torch.tensor(0.3)) + 0.5 * torch.randn(c)
    k = (torch.randn(b, t, c) * 2).to(dtype)
    v = torch.randn(b, t, c).to(dtype)
    return [time_decay, time_first, k, v]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
