"""The offline synthesizer's schedule knobs: where it starts, what hints may set, how it moves.

The start is deliberately plain (one buffer, small tiles, few blocks, DataCopyPad
everywhere, half-precision arithmetic for half inputs): memory has something to teach.
"""

from __future__ import annotations

from typing import Any

from sage.kernels import CubeKnobs, Knobs

PLAIN_TILE = 1024
PLAIN_BLOCKS = 8
MAX_TILE = 16384

# Hint keys and the values they may take; anything else in a hint is not applicable here.
VECTOR_HINTS = {"tile_len", "buffer_num", "block_dim", "copy_mode", "fp32_compute", "fold_reduce"}
ROW_ONLY_HINTS = {"fold_reduce"}
CUBE_HINTS = {"base_m", "base_n", "base_k", "l1_k", "cube_buffer_num", "cube_block_dim"}


def plain_knobs() -> Knobs:
    return Knobs(tile_len=PLAIN_TILE, buffer_num=1, block_dim=PLAIN_BLOCKS, copy_mode="pad", fp32_compute=False)


def plain_cube_knobs() -> CubeKnobs:
    return CubeKnobs(base_m=64, base_n=64, base_k=32, l1_k=64, buffer_num=1, block_dim=PLAIN_BLOCKS)


def hint_value(key: str, value: Any) -> Any:
    """A hint's value as the knob wants it, or ValueError if it is not one."""
    if key in ("tile_len", "base_m", "base_n", "base_k", "l1_k"):
        v = int(value)
        if v < 16 or v > 65536:
            raise ValueError(f"{key}={value} out of range")
        return v
    if key in ("buffer_num", "cube_buffer_num"):
        v = int(value)
        if v not in (1, 2, 3, 4):
            raise ValueError(f"{key}={value} out of range")
        return v
    if key in ("block_dim", "cube_block_dim"):
        if value in ("all", None):
            return None
        v = int(value)
        if v < 1:
            raise ValueError(f"{key}={value} out of range")
        return v
    if key == "copy_mode":
        if value not in ("pad", "auto"):
            raise ValueError(f"copy_mode={value!r}")
        return value
    if key in ("fp32_compute", "fold_reduce"):
        if not isinstance(value, bool):
            raise ValueError(f"{key}={value!r}")
        return value
    raise ValueError(f"unknown knob {key}")


def knob_field(key: str) -> str:
    """The field of Knobs/CubeKnobs a hint key sets."""
    return {"cube_buffer_num": "buffer_num", "cube_block_dim": "block_dim"}.get(key, key)


def hint_key(field: str, cube: bool) -> str:
    if cube and field in ("buffer_num", "block_dim"):
        return "cube_" + field
    return field


def hint_json(key: str, value: Any) -> Any:
    return "all" if key in ("block_dim", "cube_block_dim") and value is None else value


def describe(knobs: Knobs | CubeKnobs) -> str:
    if isinstance(knobs, CubeKnobs):
        return (f"base tile {knobs.base_m}x{knobs.base_n}, K step {knobs.base_k}, L1 K {knobs.l1_k}, "
                f"BUFFER_NUM {knobs.buffer_num}, "
                f"block_dim {knobs.block_dim or 'all cores'}")
    return (f"tile {knobs.tile_len}, BUFFER_NUM {knobs.buffer_num}, block_dim {knobs.block_dim or 'all cores'}, "
            f"{'DataCopy when aligned' if knobs.copy_mode == 'auto' else 'DataCopyPad'}, "
            f"{'fp32' if knobs.fp32_compute else 'native-dtype'} arithmetic"
            + (", folded reductions" if knobs.fold_reduce else ""))


def next_moves(knobs: Knobs | CubeKnobs, feedback: dict[str, Any], half_inputs: bool, *, cores: int,
               row: bool = False) -> list[tuple[str, Any]]:
    """Single-knob changes worth trying after this feedback, best first (`cores`: the
    target's cores for this kind of kernel)."""
    kind = feedback.get("kind")
    if isinstance(knobs, CubeKnobs):
        return _cube_moves(knobs, feedback, cores)
    moves: list[tuple[str, Any]] = []
    if kind == "error":
        err = feedback.get("error_type")
        if err == "AlignmentError":
            moves.append(("copy_mode", "pad"))
        elif err == "CapacityError":
            moves += [("tile_len", max(256, knobs.tile_len // 2)), ("buffer_num", max(1, knobs.buffer_num - 1))]
        elif err == "LaunchError":
            moves.append(("block_dim", None))
        return [m for m in moves if getattr(knobs, m[0]) != m[1]]
    if kind == "incorrect":
        if half_inputs and not knobs.fp32_compute:
            moves.append(("fp32_compute", True))
        return moves
    if kind != "correct":
        return moves
    bottleneck = feedback.get("bottleneck", "")
    cores_idle = knobs.block_dim is not None and knobs.block_dim < cores
    copy_bound = bottleneck in ("MTE2", "MTE3")
    if cores_idle:
        moves.append(("block_dim", None))
    fold = [("fold_reduce", True)] if row and not knobs.fold_reduce else []
    double = [("buffer_num", 2)] if knobs.buffer_num < 2 else []
    # Attack the bottleneck first: copies overlap with double buffering, vector time
    # shrinks with folded reductions.
    moves += double + fold if copy_bound else fold + double
    if knobs.tile_len < MAX_TILE:
        # Below 4 Ki elements every tile pays the instruction heads again: jump straight there.
        moves.append(("tile_len", min(MAX_TILE, max(4096, knobs.tile_len * 2))))
    if knobs.copy_mode == "pad":
        moves.append(("copy_mode", "auto"))
    if copy_bound and knobs.tile_len * 4 <= MAX_TILE:
        moves.append(("tile_len", knobs.tile_len * 4))
    return moves


def _cube_moves(knobs: CubeKnobs, feedback: dict[str, Any], cores: int) -> list[tuple[str, Any]]:
    if feedback.get("kind") == "error":
        if feedback.get("error_type") == "CapacityError":
            return [("k_steps", (knobs.base_k, max(knobs.base_k, knobs.l1_k // 2))), ("buffer_num", 1)]
        return []
    if feedback.get("kind") != "correct":
        return []
    moves: list[tuple[str, Any]] = []
    if knobs.block_dim is not None and knobs.block_dim < cores:
        moves.append(("block_dim", None))
    if knobs.buffer_num < 2:
        moves.append(("buffer_num", 2))
    if (knobs.base_m, knobs.base_n) != CUBE_TILE:
        moves.append(("base_tile", CUBE_TILE))
    if (knobs.base_k, knobs.l1_k) != CUBE_K_STEPS:
        moves.append(("k_steps", CUBE_K_STEPS))
    return moves


# Composite cube knobs: the base tile of C is one decision (L0C holds m x n fp32), and so
# are the K steps (L0A/L0B hold base_k, L1 holds l1_k; 320 of K fills L1 double-buffered
# with a 128x256 tile of half inputs: (128 + 256) * 320 * 2 B * 2 = 480 KiB of 512).
CUBE_TILE = (128, 256)
CUBE_K_STEPS = (64, 320)
COMPOSITE = {"base_tile": ("base_m", "base_n"), "k_steps": ("base_k", "l1_k")}


def expand(knob: str, value: Any) -> dict[str, Any]:
    """The knob fields one move sets."""
    if knob in COMPOSITE:
        return dict(zip(COMPOSITE[knob], value))
    return {knob: value}


def move_hints(knob: str, value: Any, cube: bool) -> dict[str, Any]:
    """A move as the knob hints an experience carries."""
    return {hint_key(f, cube): hint_json(hint_key(f, cube), v) for f, v in expand(knob, value).items()}


def full_hints(knobs: Knobs | CubeKnobs, cube: bool, row: bool = False) -> dict[str, Any]:
    """Every schedule knob of `knobs` as hints (a whole schedule, adopted as one)."""
    fields = (["base_m", "base_n", "base_k", "l1_k", "buffer_num", "block_dim"] if cube else
              ["tile_len", "buffer_num", "block_dim", "copy_mode", "fp32_compute"] + (["fold_reduce"] if row else []))
    return {hint_key(f, cube): hint_json(hint_key(f, cube), getattr(knobs, f)) for f in fields}
