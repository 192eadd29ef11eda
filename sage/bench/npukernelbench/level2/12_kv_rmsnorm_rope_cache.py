"""MLA KV preprocessing: RMSNorm of the latent, interleaved RoPE of the rope part, and
scatter of both into their caches, as torch_npu.npu_kv_rmsnorm_rope_cache."""

import torch

DESCRIPTION = (
    "npu_kv_rmsnorm_rope_cache (cache_mode='Norm', no quantisation): kv [B, 1, S, 576] "
    "splits into c = kv[..., :512] and r = kv[..., 512:]. c_kv = c / sqrt(mean(c^2) + eps) "
    "* gamma [512]. Interleaved RoPE on r: q = cat(r[..., 0::2], r[..., 1::2]); k_rope = "
    "q * cos + cat(-q[..., 32:], q[..., :32]) * sin with cos, sin [B, 1, S, 64]. "
    "index [B, S] int64 gives the cache row of each token (-1: not written). Returns "
    "copies of k_cache [B, 1, Sc, 64] and ckv_cache [B, 1, Sc, 512] with "
    "k_cache[b, 0, index[b, s]] = k_rope[b, 0, s] and ckv_cache[b, 0, index[b, s]] = "
    "c_kv[b, 0, s]. Computed in fp32, stored in the cache dtype."
)
TAGS = ["norm", "rope", "scatter", "kvcache"]
FUSED_OP = "torch_npu.npu_kv_rmsnorm_rope_cache"


class Model(torch.nn.Module):
    def forward(self, kv, gamma, cos, sin, index, k_cache, ckv_cache, epsilon: float):
        kvf = kv.float()
        c, r = kvf[..., :512], kvf[..., 512:]
        c_kv = c * torch.rsqrt(c.pow(2).mean(dim=-1, keepdim=True) + epsilon) * gamma.float()
        q = torch.cat((r[..., 0::2], r[..., 1::2]), dim=-1)
        half = q.shape[-1] // 2
        rotated = torch.cat((-q[..., half:], q[..., :half]), dim=-1)
        k_rope = q * cos.float() + rotated * sin.float()
        k_out, ckv_out = k_cache.clone(), ckv_cache.clone()
        b_idx, s_idx = torch.nonzero(index >= 0, as_tuple=True)
        rows = index[b_idx, s_idx]
        k_out[b_idx, 0, rows] = k_rope[b_idx, 0, s_idx].to(k_cache.dtype)
        ckv_out[b_idx, 0, rows] = c_kv[b_idx, 0, s_idx].to(ckv_cache.dtype)
        return k_out, ckv_out


def get_init_inputs():
    return []


# (dtype, B, S, cache_len)
_CASES = [
    (torch.float16, 4, 128, 512),
    (torch.bfloat16, 16, 1, 512),
    (torch.float16, 2, 301, 301),
]


def _case(dtype, b, s, cache_len):
    kv = torch.randn(b, 1, s, 576).to(dtype)
    gamma = (1 + 0.1 * torch.randn(512)).to(dtype)
    angles = torch.rand(b, 1, s, 32) * 6.283
    angles = torch.cat((angles, angles), dim=-1)
    # Distinct cache rows within a batch (rows may repeat across batches); ~5% skipped.
    index = torch.stack([torch.randperm(cache_len)[:s] for _ in range(b)]).to(torch.int64)
    index[torch.rand(b, s) < 0.05] = -1
    k_cache = torch.randn(b, 1, cache_len, 64).to(dtype)
    ckv_cache = torch.randn(b, 1, cache_len, 512).to(dtype)
    return [kv, gamma, angles.cos().to(dtype), angles.sin().to(dtype), index, k_cache,
            ckv_cache, 1e-5]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
