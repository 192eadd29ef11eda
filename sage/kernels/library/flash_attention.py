"""Flash attention forward as one MIX_AIC_1_2 launch: a kernel-library generator.

O[b, h] = softmax(scale * Q[b, h] K[b, kv]^T + mask) V[b, kv] for half-precision (fp16 or
bf16) Q [B, H, SQ, D], K and V [B, HKV, SKV, D] (GQA: HKV divides H, query head h reads kv
head h // (H / HKV)), D = 64 or 128, fp32 accumulation, output in Q's dtype.

The design is examples/kernels/flash_attention.py (its docstring explains the pipeline): a
work item is a 128-row query tile of one head; the AIC makes S^T = K_j Q_i^T per key tile
into a GM workspace, the AIVs do the online softmax (running max and sum) on it and write
P^T, the AIC multiplies the group's P by V, the AIVs rescale and accumulate O; cross-core
flags hand the tiles over, DEPTH buffers per workspace let each side run a group ahead.
What this generator adds (flash_attention_aic.py / _aiv.py / _mask.py hold the text):
- any SQ and SKV (the last query and key tiles may be partial);
- the key tiles an item visits: all of them, or with a causal mask (key kj visible to query
  qi when kj <= qi + causal_offset; 0 is torch's `is_causal`, SKV - SQ the bottom-right
  alignment of npu_fusion_attention's sparse_mode 3) only those up to the last visible key:
  the tiles above the diagonal are never computed;
- a boolean mask tensor [MB, MH, SQ, SKV] (MB in {1, B}, MH in {1, H}), either convention
  (True = masked out, as torch_npu and masked_fill; or True = keep, as SDPA's attn_mask): a
  pre-pass launch lays it out as per-tile bits. Every tile is computed (no tile skipping for
  a data mask: knowing a tile is fully masked would need per-tile flags read on the scalar
  pipe of both the AIC and the AIVs, which is not done).

Knobs (`FlashKnobs`): GROUP (key tiles per softmax update and per P V accumulation), DEPTH
(workspace buffers: how far each side runs ahead) and the block count. The tile is fixed at
128 x 128: an AIV's 64 query columns of fp32 are one 256 B vector repeat, which the max and
sum folds rely on.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from sage.kernels.library.flash_attention_aic import AIC, INIT_HEAD, SCHEDULE
from sage.kernels.library.flash_attention_aiv import MaskKind, vector_text
from sage.kernels.library.flash_attention_mask import prepass_text
from sage.kernels.library.source import HEADER, dsl_dtype
from sage.kernels.target import Target, target_for

TILE = 128
HEAD_DIMS = (64, 128)
ATTN_DTYPES = ("float16", "bfloat16")
L1_BYTES = 524288


class FlashKnobs(BaseModel):
    """How the attention pipeline is scheduled; results do not depend on them."""

    model_config = ConfigDict(frozen=True)

    group: int = Field(4, ge=1, le=8, description="key tiles per online-softmax update and per P V accumulation")
    depth: int = Field(2, ge=2, le=3, description="workspace buffers per kind: each side runs depth-1 groups ahead")
    block_dim: int | None = Field(None, ge=1, description="blocks to launch; None = all cube cores (or the items)")


class AttnSpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str = "flash_attention"
    batch: int = Field(ge=1)
    heads: int = Field(ge=1)
    kv_heads: int = Field(ge=1)
    sq: int = Field(ge=1)
    skv: int = Field(ge=1)
    d: int
    dtype: Literal["float16", "bfloat16"]
    scale: float
    mask: MaskKind = "none"
    causal_offset: int = 0                  # causal: key kj is visible to query qi when kj <= qi + offset
    mask_batch: int = 1                     # data: the mask's batch and head extents (1 = broadcast)
    mask_heads: int = 1
    mask_true_keeps: bool = False           # data: True = keep (SDPA's bool attn_mask) or masked out

    @model_validator(mode="after")
    def _check(self) -> AttnSpec:
        if self.d not in HEAD_DIMS:
            raise ValueError(f"flash attention takes head dimensions {HEAD_DIMS}, got {self.d}")
        if self.heads % self.kv_heads:
            raise ValueError(f"kv heads ({self.kv_heads}) must divide query heads ({self.heads})")
        if self.mask == "causal" and self.causal_offset < 0:
            # a negative offset leaves the first queries without a visible key (torch gives NaN)
            raise ValueError("a causal offset below 0 leaves queries with no visible key")
        if self.mask_batch not in (1, self.batch) or self.mask_heads not in (1, self.heads):
            raise ValueError("the mask's batch and head extents must be 1 or the query's")
        return self

    @property
    def nq(self) -> int:
        return -(-self.sq // TILE)

    @property
    def nk(self) -> int:
        return -(-self.skv // TILE)

    def key_tiles(self, i: int) -> int:
        """Key tiles query tile i visits."""
        if self.mask != "causal":
            return self.nk
        return min(self.nk, (min(self.sq, (i + 1) * TILE) - 1 + self.causal_offset) // TILE + 1)

    def tiles(self) -> int:
        """(query tile, key tile) pairs computed per head."""
        return sum(self.key_tiles(i) for i in range(self.nq))

    def flops(self) -> float:
        """Cube FLOPs the kernel computes: 2 matmuls of 128 x 128 x D per visited tile pair."""
        return 2 * 2 * TILE * TILE * self.d * self.tiles() * self.batch * self.heads


def blocks_for(spec: AttnSpec, knobs: FlashKnobs, target: Target) -> int:
    items = spec.batch * spec.heads * spec.nq
    return max(1, min(knobs.block_dim or target.cube_cores, target.cube_cores, items))


def _check_fit(spec: AttnSpec, knobs: FlashKnobs) -> None:
    """The AIC's L1 queues (Q, 2 K, GROUP V, 2 P groups) must fit L1."""
    l1 = TILE * spec.d * 2 * (1 + 2 + knobs.group) + 2 * knobs.group * TILE * TILE * 2
    if l1 > L1_BYTES:
        raise ValueError(f"GROUP {knobs.group} needs {l1} B of L1 at head dim {spec.d}, over {L1_BYTES}")


def flash_attention_source(spec: AttnSpec, knobs: FlashKnobs = FlashKnobs(), *, target: Target | None = None,
                           with_forward: bool = True) -> str:
    """The kernel file: constants, the attention kernel (and the mask pre-pass for a data
    mask), `{name}_launch(q, k, v[, mask], o)` writing o [B, H, SQ, D] and, if asked,
    `forward` allocating o and calling it."""
    target = target or target_for()
    _check_fit(spec, knobs)
    shape = (spec.batch, spec.heads, spec.sq, spec.d)
    mask_sq = spec.sq
    pack = packed(spec, knobs, target)
    spec = pack or spec
    blocks = blocks_for(spec, knobs, target)
    data = spec.mask == "data"
    rows = spec.mask_batch * spec.mask_heads * spec.nq          # the pre-pass: key tiles split in
    split = max(1, min(spec.nk, target.vector_cores // (rows * 2)))   # chunks until the AIVs are busy
    consts = [
        f"TILE = {TILE}", "HALF = 64", f"GROUP = {knobs.group}", f"DEPTH = {knobs.depth}", "NEG = -1.0e30",
        "FLAG_S, FLAG_P, FLAG_O = 0, 1, 2", f"BATCH = {spec.batch}", f"HEADS = {spec.heads}",
        f"KV_HEADS = {spec.kv_heads}", f"SQ = {spec.sq}", f"SKV = {spec.skv}", f"D = {spec.d}",
        f"NQ = {spec.nq}", f"NK = {spec.nk}", f"SCALE = {spec.scale!r}", f"DT = {dsl_dtype(spec.dtype)}",
        f"BLOCKS = {blocks}", f"CAUSAL_OFF = {spec.causal_offset}", f"MASK_B = {spec.mask_batch}",
        f"MASK_H = {spec.mask_heads}", f"VISIBLE = {1.0 if spec.mask_true_keeps else 0.0}",
        f"MASK_UNITS = {spec.mask_batch * spec.mask_heads * spec.nq * spec.nk * 2}",
        f"ROWS = {rows}", f"PRE_SPLIT = {split}", f"CHUNK = {-(-spec.nk // split)}",
        f"PRE_BLOCKS = {min(target.vector_cores, rows * 2 * split)}",
        f"MASK_SQ = {mask_sq}", f"MASK_ROW = {0 if pack else 1}",
    ]
    parts_head = _key_ranges(spec)
    parts = [HEADER, f"# {spec.name}: flash attention forward, {spec.mask} mask, one MIX_AIC_1_2 launch",
             "\n".join(consts), "", parts_head, SCHEDULE, INIT_HEAD, AIC,
             vector_text(spec.mask, spec.skv % TILE != 0)]
    if data:
        parts.append(prepass_text(spec.mask_true_keeps))
    parts.append(_kernel_and_launch(spec, data))
    if with_forward:
        args = "q, k, v, mask" if data else "q, k, v"
        parts.append(f"\ndef forward({args}):\n    o = empty({shape}, DT)\n"
                     f"    {spec.name}_launch({args}, o)\n    return o\n")
    return "\n".join(parts)


def packed(spec: AttnSpec, knobs: FlashKnobs, target: Target) -> AttnSpec | None:
    """GQA decode packed: with one query position, the H / HKV query heads that share a kv head
    are the rows of one query tile (Q [B, H, 1, D] is [B, HKV, H / HKV, D] in memory, and so is
    the output), so each K/V tile is multiplied once per kv head instead of once per query head.
    Taken when the mask does not vary by head and the packed items need no more waves of
    blocks than the unpacked ones (few items on many cores would leave cores idle)."""
    if spec.sq != 1 or spec.heads == spec.kv_heads or spec.mask == "causal" \
            or (spec.mask == "data" and spec.mask_heads != 1):
        return None
    pack = spec.model_copy(update={"heads": spec.kv_heads, "sq": spec.heads // spec.kv_heads})
    def waves(s: AttnSpec) -> int:
        return -(-s.batch * s.heads * s.nq // blocks_for(s, knobs, target))
    return pack if waves(pack) <= waves(spec) else None


def _key_ranges(spec: AttnSpec) -> str:
    """key_range(g, i, ranges): the key tiles query tile i of head g visits, [lo, hi); and
    read_ranges(rng): what a data mask's pre-pass found, per (mask index, query tile)."""
    if spec.mask == "data":
        return '''
def read_ranges(rng):
    gm = GlobalTensor()
    gm.SetGlobalBuffer(rng, 0, ROWS * 2)
    return [(int(gm.GetValue(r * 2)), int(gm.GetValue(r * 2 + 1))) for r in range(ROWS)]


def key_range(g, i, ranges):
    return ranges[(g // HEADS % MASK_B * MASK_H + g % HEADS % MASK_H) * NQ + i]
'''
    last = ("min(NK, (min(SQ, (i + 1) * TILE) - 1 + CAUSAL_OFF) // TILE + 1)" if spec.mask == "causal" else "NK")
    return f"""
def read_ranges(rng):
    return None


def key_range(g, i, ranges):
    return 0, {last}
"""


def _kernel_and_launch(spec: AttnSpec, data: bool) -> str:
    n = spec.name
    bits = ("    bits = empty((MASK_UNITS * TILE * HALF // 8,), uint8)\n"
            "    parts = empty((ROWS * 2 * PRE_SPLIT * 2,), int32)\n"
            "    rng = empty((ROWS * 2,), int32)\n"
            "    attention_mask[PRE_BLOCKS](mask, bits, parts, rng)\n") if data else "    bits = None\n    rng = None\n"
    return f'''
@kernel
def {n}_kernel(q, k, v, o, ws_s, ws_p, ws_o, bits, rng):
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2)
    op = KernelFlashAttention()
    op.Init(q, k, v, o, ws_s, ws_p, ws_o, bits, rng)
    if ASCEND_IS_AIC:
        op.Pipeline(op.ScoreGroup, op.ValueGroup)
    else:
        op.Pipeline(op.Softmax, op.Update)


def {n}_launch(q, k, v, {"mask, " if data else ""}o):
    ws_s = empty((BLOCKS, DEPTH * GROUP, 2, TILE * HALF), float32)   # [block][slot][AIV] S^T halves
    ws_p = empty((BLOCKS, DEPTH, TILE, GROUP * TILE), DT)           # [block][group % DEPTH] P^T tiles
    ws_o = empty((BLOCKS, DEPTH, TILE * D), float32)                 # [block][group % DEPTH] P V
{bits}    {n}_kernel[BLOCKS](q, k, v, o, ws_s, ws_p, ws_o, bits, rng)
    return o
'''


def default_scale(d: int) -> float:
    return 1.0 / math.sqrt(d)
