"""The offline agent over a list of operators, once per memory mode, in sequence (so the
memory learns from one operator to the next): does memory make it faster or better?

    .venv/bin/python benchmarks/offline_suite.py --ops softmax,layer_norm,rms_norm,gelu,silu \
        --modes none,sage --cases 1 --iterations 2 --out runs/offline_suite.json

Per mode and operator it records the speedup reached, the turn that reached it, how many
attempts ran, what was adopted and learned. Each mode gets its own fresh memory.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table


def run(ops: list[str], modes: list[str], cases: int | None, iterations: int, seed: int) -> dict:
    from sage.agent.backends.offline import OfflineBackend
    from sage.agent.loop import AgentConfig, synthesize
    from sage.bench.tasks import load_task, resolve_op
    from sage.memory import Memory

    tasks = [load_task(resolve_op(op)) for op in ops]
    out: dict = {"ops": ops, "cases": cases, "iterations": iterations, "seed": seed, "modes": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for mode in modes:
            rows = []
            with Memory(f"sqlite:///{Path(tmp) / f'{mode}.db'}") as memory:
                for task in tasks:
                    began = time.perf_counter()
                    config = AgentConfig(iterations=iterations, memory_mode=mode, seed=seed, cases=cases)
                    r = synthesize(task, OfflineBackend(task, seed=seed), memory, config)
                    rows.append({
                        "op": task.name, "status": r.status, "speedup": r.speedup,
                        "best_turn": r.best + 1 if r.best is not None else None, "attempts": len(r.turns),
                        "adopted": r.adopted, "new_experiences": r.new_experiences, "promoted": r.promoted,
                        "reward": r.reward, "wall_s": round(time.perf_counter() - began, 1),
                    })
                out["modes"][mode] = {"rows": rows, "rules": [rule.text for rule in memory.rules()]}
    return out


def show(report: dict) -> None:
    console = Console()
    for mode, data in report["modes"].items():
        t = Table(title=f"memory mode: {mode}")
        for col in ("op", "status", "speedup", "best turn", "attempts", "adopted", "learned", "wall s"):
            t.add_column(col)
        for r in data["rows"]:
            t.add_row(r["op"], r["status"], f"{r['speedup']:.3f}x" if r["speedup"] else "-",
                      str(r["best_turn"] or "-"), str(r["attempts"]), ", ".join(r["adopted"]) or "-",
                      ", ".join(r["new_experiences"]) or "-", str(r["wall_s"]))
        console.print(t)
        speeds = [r["speedup"] for r in data["rows"] if r["speedup"]]
        if speeds:
            geo = 1.0
            for s in speeds:
                geo *= s
            console.print(f"{mode}: geomean speedup {geo ** (1 / len(speeds)):.3f}x over {len(speeds)} solved; "
                          f"resident rules: {len(data['rules'])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default="softmax,layer_norm,rms_norm,gelu,silu,log_softmax")
    parser.add_argument("--modes", default="none,sage")
    parser.add_argument("--cases", type=int, default=1)
    parser.add_argument("--iterations", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    report = run(args.ops.split(","), args.modes.split(","), args.cases, args.iterations, args.seed)
    show(report)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
