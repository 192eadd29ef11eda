"""Does the memory learn which experiences help? A simulated credit-assignment study.

A synthetic population of experiences with known true effects (helpful, harmful, neutral)
serves synthetic operators. In each episode an agent retrieves from the real sage memory
(the store, retrieval, credit and consolidation code, on a temporary SQLite file), adopts
a random half of what it is shown (it cannot tell good advice from bad: that is the
memory's job), and gets a kernel whose log2-speedup is the sum of the adopted items' true
effects plus noise. The reward is the memory's own (reward.py).

Reported per mode, over seeds (mean ± sd):
- Spearman ρ between learned utility and true effect, over experiences ever retrieved
  (a consolidated experience is scored by its rule's utility);
- separation: mean utility of helpful minus mean utility of harmful items;
- precision@k in the last quarter of the run: the share of shown items (retrieved
  experiences, plus resident rules in sage mode) that are truly helpful; the population's
  base rate is one third;
- the mean reward of the last quarter.

    .venv/bin/python benchmarks/credit_assignment.py [--episodes 400] [--seeds 3] [--json]
        [--doc docs/memory.md --doc docs/results.md]

--doc writes the table as markdown between CREDIT_BEGIN/CREDIT_END markers in each file given
(appended when a file has none), so the docs' figures come from this run.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.suite_summary import place_block  # noqa: E402
from sage.memory import Memory, Outcome  # noqa: E402

TAGS = ["elementwise", "reduction", "softmax", "norm", "matmul", "broadcast", "activation", "pooling", "cast", "index"]
N_OPERATORS = 12
N_EXPERIENCES = 60
ADOPT_PROBABILITY = 0.5
NOISE = 0.25  # sd of the log2-speedup noise
MODES = ("none", "uniform", "atu", "sage")
COLUMNS = (("spearman", "Spearman ρ(U, true effect)"), ("separation", "mean U helpful − harmful"),
           ("precision_at_k", "precision@k, last quarter"), ("late_reward", "reward, last quarter"))
CREDIT_BEGIN, CREDIT_END = "<!-- credit-study -->", "<!-- /credit-study -->"


@dataclass(frozen=True)
class World:
    operators: list[tuple[str, list[str]]]
    drafts: list[dict]
    effects: list[float]  # true log2-speedup effect of adopting experience i (0-based, E<i+1>)


def make_world(seed: int) -> World:
    rng = random.Random(seed)
    operators = [(f"op{i}", rng.sample(TAGS, 2)) for i in range(N_OPERATORS)]
    drafts, effects = [], []
    for i in range(N_EXPERIENCES):
        kind = i % 3  # 0 helpful, 1 harmful, 2 neutral: a third each
        effect = rng.uniform(0.3, 0.8) if kind == 0 else (-rng.uniform(0.3, 0.8) if kind == 1 else 0.0)
        tags = rng.sample(TAGS, 2)
        drafts.append(dict(title=f"{tags[0]} {tags[1]} tip {i}",
                           advice=f"For {tags[0]} and {tags[1]} kernels apply trick {i}.", tags=tags, hints={"trick": i}))
        effects.append(effect)
    return World(operators, drafts, effects)


def spearman(xs: list[float], ys: list[float]) -> float:
    def ranks(values: list[float]) -> list[float]:
        order = sorted(range(len(values)), key=values.__getitem__)
        out = [0.0] * len(values)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
                j += 1
            for m in range(i, j + 1):
                out[order[m]] = (i + j) / 2 + 1
            i = j + 1
        return out

    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    sx, sy = (sum((a - mx) ** 2 for a in rx)) ** 0.5, (sum((b - my) ** 2 for b in ry)) ** 0.5
    return cov / (sx * sy) if sx and sy else 0.0


def run(mode: str, world: World, *, episodes: int, seed: int, db: Path) -> dict[str, float]:
    memory = Memory(f"sqlite:///{db}")
    seeding = memory.start_episode(task="seed", op_tags=[], model="sim", mode="atu", seed=0)
    for draft in world.drafts:
        seeding.add_experience(**draft)
    ids = seeding.finish(Outcome(executed=True, correct=False)).new_experiences
    effect = {exp_id: world.effects[i] for i, exp_id in enumerate(ids)}

    rng = random.Random(seed)
    late_from = episodes - episodes // 4
    shown_helpful = shown_total = 0
    late_rewards = []
    for n in range(episodes):
        name, tags = rng.choice(world.operators)
        episode = memory.start_episode(task=name, op_tags=tags, model="sim", mode=mode, seed=seed * 100_000 + n)
        shown = [e.id for e in episode.retrieve(f"{name} {' '.join(tags)} kernels", tags)]
        rule_source = {r.id: r.sources[0] for r in episode.rules}
        offered = shown + list(rule_source)
        adopted = [i for i in offered if rng.random() < ADOPT_PROBABILITY]
        if adopted:
            episode.declare_adopted(adopted, attempt=1)
        latent = sum(effect[rule_source.get(i, i)] for i in adopted) + rng.gauss(0.0, NOISE)
        report = episode.finish(Outcome(executed=True, correct=True, speedup=2.0**latent))
        if n >= late_from:
            late_rewards.append(report.reward)
            shown_total += len(offered)
            shown_helpful += sum(effect[rule_source.get(i, i)] > 0 for i in offered)

    utility = {e.id: e.utility for e in memory.experiences()}
    for rule in memory.rules():
        if memory.show(rule.sources[0]).experience.status == "consolidated":
            utility[rule.sources[0]] = rule.utility
    seen = [e.id for e in memory.experiences() if e.retrieved > 0]
    memory.close()
    helpful = [utility[i] for i in seen if effect[i] > 0]
    harmful = [utility[i] for i in seen if effect[i] < 0]
    return {
        "spearman": spearman([utility[i] for i in seen], [effect[i] for i in seen]) if len(seen) > 2 else float("nan"),
        "separation": (statistics.fmean(helpful) - statistics.fmean(harmful)) if helpful and harmful else float("nan"),
        "precision_at_k": shown_helpful / shown_total if shown_total else float("nan"),
        "late_reward": statistics.fmean(late_rewards),
        "seen": len(seen),
    }


def _fmt(values: list[float]) -> str:
    clean = [v for v in values if v == v]
    if not clean:
        return "—"
    sd = statistics.stdev(clean) if len(clean) > 1 else 0.0
    return f"{statistics.fmean(clean):+.3f} ± {sd:.3f}"


def markdown(results: dict[str, list[dict[str, float]]], episodes: int, seeds: int, cpu_s: float) -> str:
    """The study as a markdown table, mean ± sd over seeds, the best mean of each column in bold."""
    def mean(mode: str, key: str) -> float:
        clean = [r[key] for r in results[mode] if r[key] == r[key]]
        return statistics.fmean(clean) if clean else float("-inf")

    best = {key: max(MODES, key=lambda m: mean(m, key)) for key, _ in COLUMNS}
    lines = [f"{episodes} episodes per run, {seeds} seed(s) (mean ± sd), {cpu_s:.0f} s of CPU; written by "
             f"`python benchmarks/credit_assignment.py --episodes {episodes} --seeds {seeds} --doc FILE`. "
             "The figures are deterministic for a given seed:", "",
             "| mode | " + " | ".join(title for _, title in COLUMNS) + " |", "|---" * (len(COLUMNS) + 1) + "|"]
    for mode in MODES:
        cells = []
        for key, _ in COLUMNS:
            text = _fmt([r[key] for r in results[mode]])
            cells.append(f"**{text}**" if best[key] == mode and text != "—" else text)
        lines.append(f"| {mode} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def study(episodes: int, seeds: int) -> dict[str, list[dict[str, float]]]:
    """Every mode on the worlds of seeds 0..seeds-1, each run on its own temporary SQLite memory."""
    results: dict[str, list[dict[str, float]]] = {m: [] for m in MODES}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(seeds):
            world = make_world(seed)
            for mode in MODES:
                results[mode].append(run(mode, world, episodes=episodes, seed=seed, db=Path(tmp) / f"{mode}{seed}.db"))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=400)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--doc", type=Path, action="append", default=[],
                        help="write the table into this markdown file (repeatable)")
    args = parser.parse_args()
    started, cpu0 = time.monotonic(), time.process_time()
    results = study(args.episodes, args.seeds)
    elapsed, cpu_s = time.monotonic() - started, time.process_time() - cpu0
    for doc in args.doc:
        place_block(doc, markdown(results, args.episodes, args.seeds, cpu_s), CREDIT_BEGIN, CREDIT_END)
        print(f"wrote the credit study into {doc}", file=sys.stderr)
    if args.json:
        print(json.dumps({"episodes": args.episodes, "seeds": args.seeds, "seconds": elapsed, "results": results}, indent=1))
        return
    print(f"{args.episodes} episodes × {args.seeds} seeds per mode, {N_EXPERIENCES} experiences "
          f"(⅓ helpful, ⅓ harmful, ⅓ neutral), {N_OPERATORS} operators, adopt p={ADOPT_PROBABILITY}; {elapsed:.0f} s")
    header = f"{'mode':8} {'Spearman ρ(U, effect)':>22} {'U helpful − harmful':>20} {'precision@k (late)':>20} {'reward (late)':>16}"
    print(header)
    print("-" * len(header))
    for mode in MODES:
        rows = results[mode]
        print(f"{mode:8} {_fmt([r['spearman'] for r in rows]):>22} {_fmt([r['separation'] for r in rows]):>20} "
              f"{_fmt([r['precision_at_k'] for r in rows]):>20} {_fmt([r['late_reward'] for r in rows]):>16}")


if __name__ == "__main__":
    main()
