"""Per-head RMSNorm of q and k (Qwen3-style QK-norm), neox RoPE, and a paged KV-cache write."""

import torch

DESCRIPTION = (
    "q [T, Hq, D], k, v [T, Hk, D], q_weight, k_weight [D], positions [T] int64, "
    "cos_sin_cache [max_pos, D] fp32 (first D/2 columns cos, last D/2 sin, vLLM layout), "
    "key_cache, value_cache [num_slots, Hk, D], slot_mapping [T] int64 (distinct; -1 = "
    "padding token, not written), eps. In fp32: q' = rmsnorm(q) * q_weight and "
    "k' = rmsnorm(k) * k_weight over D per head; then neox RoPE at positions: "
    "x * cat(c, c) + cat(-x2, x1) * cat(s, s). Returns (q_out [T, Hq, D], key_cache_out, "
    "value_cache_out) where the caches are copies with rows slot_mapping[t] replaced by "
    "k'[t] and v[t]; outputs in the input dtype."
)
TAGS = ["rope", "norm", "scatter", "kvcache"]


def _rms(x, weight, eps):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight.float()


def _rope_neox(x, cos, sin):
    x1, x2 = x.chunk(2, dim=-1)
    return x * torch.cat((cos, cos), -1) + torch.cat((-x2, x1), -1) * torch.cat((sin, sin), -1)


class Model(torch.nn.Module):
    def forward(self, q, k, v, q_weight, k_weight, positions, cos_sin_cache, key_cache,
                value_cache, slot_mapping, eps: float):
        cos, sin = cos_sin_cache[positions].float()[:, None, :].chunk(2, dim=-1)
        q_out = _rope_neox(_rms(q.float(), q_weight, eps), cos, sin)
        k_out = _rope_neox(_rms(k.float(), k_weight, eps), cos, sin)
        valid = slot_mapping >= 0
        slots = slot_mapping[valid]
        key_cache_out = key_cache.clone()
        value_cache_out = value_cache.clone()
        key_cache_out[slots] = k_out[valid].to(key_cache.dtype)
        value_cache_out[slots] = v[valid].to(value_cache.dtype)
        return q_out.to(q.dtype), key_cache_out, value_cache_out


def get_init_inputs():
    return []


# (dtype, T, Hq, Hk, D, num_slots, max_pos)
_CASES = [
    (torch.bfloat16, 256, 32, 8, 128, 2048, 4096),
    (torch.float16, 301, 16, 2, 64, 1024, 2048),
    (torch.float32, 64, 8, 8, 128, 512, 8192),
]


def _case(dtype, t, hq, hk, d, num_slots, max_pos):
    inv_freq = 1e6 ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
    angles = torch.arange(max_pos, dtype=torch.float32)[:, None] * inv_freq
    cos_sin_cache = torch.cat((angles.cos(), angles.sin()), dim=-1)
    slot_mapping = torch.randperm(num_slots)[:t].to(torch.int64)
    slot_mapping[torch.rand(t) < 0.05] = -1
    return [
        torch.randn(t, hq, d).to(dtype),
        torch.randn(t, hk, d).to(dtype),
        torch.randn(t, hk, d).to(dtype),
        (1 + 0.1 * torch.randn(d)).to(dtype),
        (1 + 0.1 * torch.randn(d)).to(dtype),
        torch.randint(0, max_pos, (t,), dtype=torch.int64),
        cos_sin_cache,
        torch.randn(num_slots, hk, d).to(dtype),
        torch.randn(num_slots, hk, d).to(dtype),
        slot_mapping,
        1e-6,
    ]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
