"""The figures of docs/security.md (OS isolation), measured on this machine, as Markdown.

    .venv/bin/python -m tests.security.isolation_figures

Prints what `probe()` reports, the cost of lock_down, and which layer alone stops which
attack (the same attacks and single layers as tests/security/test_isolation.py).
"""

from __future__ import annotations

import errno
import os
import platform
import signal
import statistics

from sage.npu import isolation

from .attacks import Workspace
from .harness import SINGLE_LAYERS, full, run_isolated
from .test_isolation import STOPPED_BY, measure_lock_down


# Each layer of lock_down alone, in lock_down's order, for the cost of each.
EVERY_LAYER = {
    "pdeathsig": lambda d, keep, parent: isolation.arm_parent_death_signal(parent),
    "close_fds": lambda d, keep, parent: isolation.close_inherited_fds(set(keep)),
    "netns": SINGLE_LAYERS["netns"],
    "landlock": SINGLE_LAYERS["landlock"],
    "uid": SINGLE_LAYERS["uid"],
    "rlimits": lambda d, keep, parent: isolation.apply_rlimits(10, 64 * 2**30, 0, 64),
    "seccomp": SINGLE_LAYERS["seccomp"],
}


def _layer_costs(private_dir: str, forks: int = 20) -> str:
    medians = []
    for name, setup in EVERY_LAYER.items():
        took = [run_isolated(lambda: None, private_dir, setup).setup_seconds for _ in range(forks)]
        medians.append(f"{name} {statistics.median(took) * 1e3:.2f}")
    return "per layer alone (ms, median of 20 children): " + ", ".join(medians)


def _cell(ws: Workspace, attack, setup) -> str:
    outcome = run_isolated(lambda: attack(ws), str(ws.private), setup)
    if outcome.errno is not None:
        return errno.errorcode[outcome.errno]
    if outcome.error is not None:
        return f"error: {outcome.error}"
    if outcome.signal is not None:
        return f"killed by {signal.Signals(outcome.signal).name}"
    return "not stopped"


def main() -> None:
    # signal_parent aims SIGUSR2 at this process: where a layer lets it through, survive it.
    signal.signal(signal.SIGUSR2, lambda signum, frame: None)
    report = isolation.probe()
    print(f"Machine: Linux {platform.release()}, {platform.machine()}\n")
    print("| layer | active | detail |\n|---|---|---|")
    for layer in report.layers:
        print(f"| {layer.name} | {'yes' if layer.active else 'no'} | {layer.detail} |")
    ws = Workspace.create()
    try:
        cost = measure_lock_down(str(ws.private))
        print(f"\nlock_down: {cost['lock_down'] * 1e3:.2f} ms (median of 20 children); a fork-to-exit "
              f"round trip: {cost['round_trip_locked'] * 1e3:.2f} ms with it, "
              f"{cost['round_trip_plain'] * 1e3:.2f} ms without; load average "
              f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        print(_layer_costs(str(ws.private)) + "\n")
        layers = list(SINGLE_LAYERS)
        print("| attack | " + " | ".join(f"{name} alone" for name in layers) + " | lock_down |")
        print("|---" * (len(layers) + 2) + "|")
        for attack in STOPPED_BY:
            cells = []
            for setup in [*SINGLE_LAYERS.values(), full]:
                fresh = Workspace.create()  # an attack that goes through must not touch the next
                try:
                    cells.append(_cell(fresh, attack, setup))
                finally:
                    fresh.close()
            print(f"| {attack.__name__} | " + " | ".join(cells) + " |")
    finally:
        ws.close()


if __name__ == "__main__":
    main()
