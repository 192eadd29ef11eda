"""Horizontal fusion of traced launches: independent tile programs as one shape-generic launch.

As `sage.agent.compiler.merge` does for concrete launches (which programs are independent
is decided there, on the case's footprints), but the blocks are dealt on the host: each
part's tiles and bytes are tiling fields, and the merged launcher calls `merge_plan` (a
host helper written once in the file) for each part's tiles per block and where its
blocks end. The merged kernel's fields are its parts' fields, renumbered, then their
tiles and weights; its parameters are its parts', one after the other.
"""

from __future__ import annotations

import re

from sage.agent.compiler.generic.casemodel import TracedLaunch
from sage.agent.compiler.generic.module import FIELD, take_tiling
from sage.agent.compiler.generic.prune import prune
from sage.agent.compiler.merge import merge_launches
from sage.kernels import HEADER, suffixed
from sage.kernels.symbolic import Formula

# The host's block split (merge.split_blocks, then each part's tiles per block), as kernel text.
MERGE_PLAN = '''def merge_plan(weights, tiles, cores):
    total = 0
    for w in weights:
        total = total + w
    total = max(total, 1)
    n = []
    for w, t in zip(weights, tiles):
        n.append(max(1, min(t, round(cores * w / total))))
    while sum(n) > cores:
        best = -1
        for i in range(len(n)):
            if n[i] > 1 and (best < 0 or weights[i] / n[i] < weights[best] / n[best]):
                best = i
        n[best] = n[best] - 1
    while sum(n) < cores:
        best = -1
        for i in range(len(n)):
            if n[i] < tiles[i] and (best < 0 or weights[i] / n[i] > weights[best] / n[best]):
                best = i
        if best < 0:
            break
        n[best] = n[best] + 1
    plan = []
    end = 0
    for t, k in zip(tiles, n):
        per = (t + k - 1) // k
        end = end + (t + per - 1) // per
        plan.append(per)
        plan.append(end)
    return tuple(plan)
'''


def merged_launches(launches: list[TracedLaunch], cores: int) -> list[TracedLaunch]:
    """Runs of consecutive independent tile launches as one launch each (merge.merge_launches
    decides the runs on the case's concrete programs)."""
    by_id = {id(t.launch): t for t in launches}
    runs = merge_launches([t.launch for t in launches], cores, combine=lambda run, name, cores: run)
    out = []
    for item in runs:
        if isinstance(item, list):
            out.append(_merged([by_id[id(launch)] for launch in item], f"m{len(out)}", cores))
        else:
            out.append(by_id[id(item)])
    return out


def _renumbered(f: Formula, params: int) -> Formula:
    if f[0] == "p":
        return ("p", f[1] + params)
    if f[0] == "c":
        return f
    if f[0] == "k":
        return ("k", f[1], _renumbered(f[2], params))
    return (f[0], *(_renumbered(a, params) for a in f[1:]))


def _merged(parts: list[TracedLaunch], name: str, cores: int) -> TracedLaunch:
    texts, values, guards, fields, args = [], [], {}, [], []
    sizes = []                                   # per part: (its tiles' field, its weight's field)
    for i, part in enumerate(parts):
        base_p, base_f = len(values), len(fields)
        text = FIELD.sub(lambda m: f"td{int(m.group()[2:]) + base_f}", part.raw)
        texts.append(suffixed(text, f"_p{i}"))
        values += part.values
        guards.update({_renumbered(g, base_p): o for g, o in part.guards.items()})
        fields += [_renumbered(f, base_p) for f in part.fields]
        tiles = re.search(r"^T = td(\d+)$", part.raw, re.M)
        if tiles is None:
            raise ValueError("a merged tile program without its tile count T")
        fields.append(_renumbered(part.fields[int(tiles.group(1))], base_p))
        fields.append(_renumbered(part.weight, base_p))
        sizes.append((f"td{len(fields) - 2}", f"td{len(fields) - 1}"))
        args += [a for a in part.launch.program.args if a not in args]
    canon = {a: f"b{k}" for k, a in enumerate(args)}
    params = ", ".join(canon[a] for a in args)
    body = ["    blk = GetBlockIdx()"]
    for i, part in enumerate(parts):
        test = "if" if i == 0 else "elif"
        start = "0" if i == 0 else f"plan[{2 * i - 1}]"
        body += [f"    {test} blk < plan[{2 * i + 1}]:", f"        op = {part.launch.program.cls}_p{i}()",
                 f"        op.Init({', '.join(canon[a] for a in part.launch.program.args)}, plan[{2 * i}], blk - {start})",
                 "        op.Process()"]
    weights = ", ".join(w for _, w in sizes)
    tiles = ", ".join(t for t, _ in sizes)
    kernel = (f"@kernel\ndef {name}_kernel({params}, plan):\n" + "\n".join(body) + "\n\n\n"
              f"def {name}_launch({params}):\n"
              f"    plan = merge_plan(({weights},), ({tiles},), {cores})\n"
              f"    {name}_kernel[plan[-1]]({params}, plan)\n")
    raw = prune(HEADER + "\n".join(texts) + "\n\n" + MERGE_PLAN + "\n\n" + kernel, {f"{name}_launch"})
    label = "one launch of " + "; ".join(p.label for p in parts)
    return TracedLaunch(kernel=take_tiling(raw, len(fields)), args=args, values=values, guards=guards,
                        fields=fields, label=label, entry=f"{name}_launch")


__all__ = ["MERGE_PLAN", "merged_launches"]
