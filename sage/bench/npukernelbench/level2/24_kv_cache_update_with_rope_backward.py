"""Backward of "apply neox RoPE to keys, then write keys and values into a paged KV cache"."""

import torch

DESCRIPTION = (
    "Forward: k_rot = rope_neox(key, positions); key_cache_out = key_cache with rows "
    "slot_mapping[t] replaced by k_rot[t]; value_cache_out likewise with value[t]. "
    "Inputs: grad_key_cache, grad_value_cache [num_slots, Hk, D] (grads of the caches "
    "out), slot_mapping [T] int64 (distinct), positions [T] int64, cos_sin_cache "
    "[max_pos, D] fp32 (cos | sin halves). Outputs: grad_key [T, Hk, D] = "
    "g * cat(c, c) + rotate_half^T(g * cat(s, s)) with g = grad_key_cache[slot_mapping] and "
    "rotate_half^T(v) = cat(v2, -v1); grad_value = grad_value_cache[slot_mapping]; "
    "grad_key_cache_in, grad_value_cache_in = the cache grads with the written rows zeroed. "
    "All in the grads' dtype, fp32 math."
)
TAGS = ["backward", "rope", "gather", "kvcache"]


class Model(torch.nn.Module):
    def forward(self, grad_key_cache, grad_value_cache, slot_mapping, positions, cos_sin_cache):
        cos, sin = cos_sin_cache[positions].float()[:, None, :].chunk(2, dim=-1)
        cos, sin = torch.cat((cos, cos), -1), torch.cat((sin, sin), -1)
        g = grad_key_cache[slot_mapping].float()
        gs1, gs2 = (g * sin).chunk(2, dim=-1)
        grad_key = g * cos + torch.cat((gs2, -gs1), dim=-1)
        grad_value = grad_value_cache[slot_mapping]
        grad_key_cache_in = grad_key_cache.clone()
        grad_key_cache_in[slot_mapping] = 0
        grad_value_cache_in = grad_value_cache.clone()
        grad_value_cache_in[slot_mapping] = 0
        return (grad_key.to(grad_key_cache.dtype), grad_value, grad_key_cache_in,
                grad_value_cache_in)


def get_init_inputs():
    return []


# (dtype, T, num_slots, Hk, D, max_pos)
_CASES = [
    (torch.float32, 256, 1024, 8, 128, 4096),
    (torch.bfloat16, 301, 4096, 4, 64, 2048),
    (torch.float16, 1024, 2048, 2, 128, 8192),
]


def _case(dtype, t, num_slots, hk, d, max_pos):
    inv_freq = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
    angles = torch.arange(max_pos, dtype=torch.float32)[:, None] * inv_freq
    return [
        torch.randn(num_slots, hk, d).to(dtype),
        torch.randn(num_slots, hk, d).to(dtype),
        torch.randperm(num_slots)[:t].to(torch.int64),
        torch.randint(0, max_pos, (t,), dtype=torch.int64),
        torch.cat((angles.cos(), angles.sin()), dim=-1),
    ]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
