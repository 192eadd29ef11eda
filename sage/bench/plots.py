"""The report's plots, drawn from result rows alone: what a reader looks at before the tables.

- speedup_distribution.png: the speedup of every correct task on a log axis (ratios: 0.5x
  and 2x are equally far from 1x), stacked and coloured per level, a line at 1x;
- roofline_vs_reference.png: each correct case's fraction of the roofline bound against its
  reference (torch_npu model) time, per level; the axis grows past 1.0 if a value does;
- learning_curve.png: per memory mode and epoch, the share of correct tasks with its 95 %
  Wilson interval and the geometric-mean speedup of the solved ones with a 95 % bootstrap
  interval (bands, so two modes that differ by noise are seen to overlap).

Every caption (in the picture and in report.md) counts the tasks that are not drawn: failed
ones (wrong, error, no kernel, crashed) and skipped ones, and names each level that has no
solved task instead of leaving it out silently.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from sage.bench.evaluate import TaskEvaluation

SPEEDUP_FILE = "speedup_distribution.png"
ROOFLINE_FILE = "roofline_vs_reference.png"
LEARNING_FILE = "learning_curve.png"
SKIP_STATUSES = ("reference_unavailable", "reference_error", "unsupported")   # as sage.bench.evaluate
BOOTSTRAP_SAMPLES = 2000
Z95 = 1.959964
DPI = 110


@dataclass(frozen=True)
class Plot:
    file: str
    title: str
    caption: str

    def markdown(self) -> str:
        return f"![{self.title}]({self.file})\n\n*{self.caption}*"


def level_name(level: int | None) -> str:
    return f"L{level}" if level is not None else "other"


def _levels(evaluations: Sequence[TaskEvaluation]) -> list[str]:
    present = {e.level for e in evaluations}
    return [level_name(v) for v in sorted(x for x in present if x is not None)] + (["other"] if None in present else [])


def _colours(levels: list[str]) -> dict[str, tuple]:
    import matplotlib

    cmap = matplotlib.colormaps["tab10"]
    return {name: cmap(i % 10) for i, name in enumerate(levels)}


def not_drawn(evaluations: Sequence[TaskEvaluation]) -> str:
    """"3 failed (2 wrong, 1 error) and 1 skipped, not drawn; no solved task in L3, L4"."""
    failed = [e for e in evaluations if not e.correct and e.status not in SKIP_STATUSES]
    skipped = sum(e.status in SKIP_STATUSES for e in evaluations)
    kinds: dict[str, int] = {}
    for e in failed:
        kinds[e.status] = kinds.get(e.status, 0) + 1
    parts = [f"{len(failed)} failed" + (f" ({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))})"
                                         if failed else "")]
    if skipped:
        parts.append(f"{skipped} skipped (reference unavailable)")
    text = " and ".join(parts) + " task(s) not drawn"
    unsolved = [lv for lv in _levels(evaluations)
                if not any(e.correct for e in evaluations if level_name(e.level) == lv)]
    if unsolved:
        text += f"; no solved task in {', '.join(unsolved)}"
    return text


def speedup_distribution(evaluations: Sequence[TaskEvaluation], out: Path) -> Plot | None:
    """Histogram of the correct tasks' speedups, log-spaced bins, stacked per level."""
    solved = [e for e in evaluations if e.correct and e.speedup]
    if not solved:
        return None
    plt = _pyplot()
    levels = _levels(evaluations)
    colours = _colours(levels)
    values = [e.speedup for e in solved]
    lo, hi = min(min(values), 1.0) / 1.3, max(max(values), 1.0) * 1.3
    bins = np.geomspace(lo, hi, int(min(30, max(8, 2 * math.sqrt(len(values))))) + 1)
    by_level = [[e.speedup for e in solved if level_name(e.level) == lv] for lv in levels]
    totals = {lv: sum(level_name(e.level) == lv for e in evaluations if e.status not in SKIP_STATUSES)
              for lv in levels}
    labels = [f"{lv}: {len(v)} of {totals[lv]} solved" for lv, v in zip(levels, by_level)]
    fig, ax = plt.subplots(figsize=(8.5, 4))
    ax.hist(by_level, bins=bins, stacked=True, color=[colours[lv] for lv in levels], label=labels,
            edgecolor="white", linewidth=0.5)
    ax.axvline(1.0, color="black", linestyle="--", linewidth=1.2)
    ax.text(1.0, 1.0, "1x = the reference", transform=ax.get_xaxis_transform(), va="bottom", ha="center",
            fontsize=8)
    _log_axis(ax, "x", lo, hi)
    ax.set_xlabel("end-to-end speedup over the torch_npu reference (log scale)")
    ax.set_ylabel("correct tasks")
    ax.yaxis.get_major_locator().set_params(integer=True)
    faster = sum(v > 1.0 for v in values)
    ax.set_title(f"Speedup of the {len(values)} correct tasks ({faster} faster than the reference)", pad=16)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title="level", title_fontsize=8)
    caption = f"{not_drawn(evaluations)}."
    _save(fig, out / SPEEDUP_FILE, caption)
    return Plot(SPEEDUP_FILE, "Speedup distribution", caption)


def roofline_vs_reference(evaluations: Sequence[TaskEvaluation], out: Path) -> Plot | None:
    """Each correct case: its fraction of the roofline bound against its reference time."""
    solved = [e for e in evaluations if e.correct]
    points = [(level_name(e.level), c.reference_times.end_to_end_us, c.roofline_fraction) for e in solved
              for c in e.cases if c.reference_times and c.reference_times.end_to_end_us
              and c.roofline_fraction is not None]
    if not points:
        return None
    plt = _pyplot()
    levels = _levels(evaluations)
    colours = _colours(levels)
    fig, ax = plt.subplots(figsize=(8.5, 4))
    for lv in levels:
        mine = [(x, y) for name, x, y in points if name == lv]
        if mine:
            ax.scatter([x for x, _ in mine], [y for _, y in mine], s=22, color=colours[lv], alpha=0.8,
                       edgecolor="white", linewidth=0.4, label=f"{lv}: {len(mine)} case(s)")
        else:   # said in the legend, with no dot of its colour
            ax.scatter([], [], marker="x", color="grey", label=f"{lv}: no solved task")
    ax.set_ylim(0, roofline_top([y for *_, y in points]))
    ax.axhline(1.0, color="black", linestyle="--", linewidth=1)
    ax.text(0.005, 1.0, "roofline bound ", transform=ax.get_yaxis_transform(), va="bottom", fontsize=8)
    xs = [x for _, x, _ in points]
    _log_axis(ax, "x", min(xs) / 1.5, max(xs) * 1.5, suffix="")
    ax.set_xlabel("reference time of the case (µs, log scale)")
    ax.set_ylabel("fraction of the roofline bound")
    ax.set_title(f"Roofline fraction of {len(points)} correct case(s) of {len(solved)} task(s)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title="level", title_fontsize=8)
    ax.grid(alpha=0.3)
    caption = f"Dots are cases; {not_drawn(evaluations)}."
    _save(fig, out / ROOFLINE_FILE, caption)
    return Plot(ROOFLINE_FILE, "Roofline fraction against reference time", caption)


def learning_curve(finals: dict[str, dict[int, Sequence[TaskEvaluation]]], out: Path) -> Plot | None:
    """`finals`: memory mode -> epoch (from 0) -> the final evaluation of each counted task."""
    curves = {mode: {e: [x for x in evs if x.status not in SKIP_STATUSES] for e, evs in epochs.items()}
              for mode, epochs in finals.items()}
    curves = {m: {e: evs for e, evs in epochs.items() if evs} for m, epochs in curves.items()}
    curves = {m: epochs for m, epochs in curves.items() if epochs}
    if not curves or (len(curves) == 1 and len(next(iter(curves.values()))) < 2):
        return None   # one mode, one epoch: a point is not a curve
    plt = _pyplot()
    fig, (acc, fast) = plt.subplots(1, 2, figsize=(10, 4))
    styles = [("o", "-"), ("s", "--"), ("^", "-."), ("D", ":")]
    failed: list[str] = []
    extent: list[float] = [1.0]
    for i, (mode, epochs) in enumerate(curves.items()):
        marker, dash = styles[i % len(styles)]
        # Modes side by side around each epoch: equal results stay visible, not drawn over.
        dodge = (i - (len(curves) - 1) / 2) * 0.04
        xs = np.array([e + 1 + dodge for e in epochs], dtype=float)
        rates = [wilson([x.correct for x in evs]) for evs in epochs.values()]
        line = acc.plot(xs, [100 * r[0] for r in rates], marker=marker, linestyle=dash, label=mode)[0]
        acc.fill_between(xs, [100 * r[1] for r in rates], [100 * r[2] for r in rates], color=line.get_color(),
                         alpha=0.15, linewidth=0)
        speed = [(x, geomean_interval([t.speedup for t in evs if t.correct and t.speedup]))
                 for x, evs in zip(xs, epochs.values())]
        speed = [(x, s) for x, s in speed if s is not None]
        extent += [v for _, s in speed for v in s]
        if speed:
            sx = [x for x, _ in speed]
            fast.plot(sx, [s[0] for _, s in speed], marker=marker, linestyle=dash, color=line.get_color(), label=mode)
            fast.fill_between(sx, [s[1] for _, s in speed], [s[2] for _, s in speed], color=line.get_color(),
                              alpha=0.15, linewidth=0)
        counts = ", ".join(f"{sum(not x.correct for x in evs)}/{len(evs)}" for evs in epochs.values())
        failed.append(f"{mode} {counts}")
    ticks = sorted({e + 1 for epochs in curves.values() for e in epochs})
    for ax, label in ((acc, "correct tasks (%)"), (fast, "geomean e2e speedup, solved (log)")):
        ax.set_xlabel("epoch")
        ax.set_ylabel(label)
        ax.set_xticks(ticks)
        ax.grid(alpha=0.3)
    acc.set_ylim(-3, 103)
    _log_axis(fast, "y", min(extent) / 1.15, max(extent) * 1.15)
    fast.axhline(1.0, color="black", linestyle="--", linewidth=1)
    acc.legend(title="memory", loc="best", fontsize=8)
    acc.set_title("Correct tasks, 95 % Wilson band")
    fast.set_title("Speedup of the solved, 95 % bootstrap band")
    caption = ("Failed/counted tasks per epoch: " + "; ".join(failed) + " (skipped tasks are not counted). "
               "Bands: 95 % intervals over the tasks, not over repeated runs.")
    _save(fig, out / LEARNING_FILE, caption)
    return Plot(LEARNING_FILE, "Learning curve per memory mode", caption)


def roofline_top(fractions: Sequence[float]) -> float:
    """The top of the roofline axis: above 1.0 and above every value, with headroom, so a case
    at (or past) the bound is drawn inside the frame, not pinned to its edge."""
    return max(1.0, *fractions) * 1.12


# Tick mantissas of a log axis, coarse to fine: the first giving 3 ticks in range is used.
_MANTISSAS = ((1, 2, 5), (1, 1.5, 2, 3, 5, 7), (1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 8),
              (1, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.8, 2, 2.5, 3, 3.5, 4, 5, 6, 7, 8, 9))


def ratio_ticks(lo: float, hi: float) -> list[float]:
    """Ticks of a log axis within [lo, hi]: 1-2-5 steps, finer ones when the range is narrow
    (at least 3 ticks where the finest steps give them)."""
    ticks: list[float] = []
    for mantissas in _MANTISSAS:
        steps = [round(m * 10.0 ** k, 12) for k in range(math.floor(math.log10(lo)) - 1,
                                                         math.ceil(math.log10(hi)) + 1) for m in mantissas]
        ticks = [t for t in steps if lo <= t * (1 + 1e-9) and t <= hi * (1 + 1e-9)]
        if len(ticks) >= 3:
            return ticks
    return ticks or [1.0]


def wilson(outcomes: Sequence[bool]) -> tuple[float, float, float]:
    """The share of successes and its 95 % Wilson score interval."""
    n = len(outcomes)
    if n == 0:
        return 0.0, 0.0, 0.0
    p = sum(outcomes) / n
    denom = 1 + Z95 ** 2 / n
    centre = (p + Z95 ** 2 / (2 * n)) / denom
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95 ** 2 / (4 * n * n)) / denom
    return p, max(0.0, centre - half), min(1.0, centre + half)


def geomean_interval(values: Sequence[float], seed: int = 0) -> tuple[float, float, float] | None:
    """The geometric mean and a 95 % percentile-bootstrap interval (seeded: reports rebuild alike)."""
    logs = np.log([v for v in values if v and v > 0])
    if logs.size == 0:
        return None
    mean = float(np.exp(logs.mean()))
    if logs.size == 1:
        return mean, mean, mean
    rng = np.random.default_rng(seed)
    means = logs[rng.integers(0, logs.size, size=(BOOTSTRAP_SAMPLES, logs.size))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return mean, float(np.exp(low)), float(np.exp(high))


# -- drawing helpers ---------------------------------------------------------------------------

def _pyplot():  # noqa: ANN202 - the pyplot module
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _plain_log_formatter(suffix: str):  # noqa: ANN202 - a matplotlib Formatter
    """Ticks as 0.5x, 1x, 20x: never 8x10^-1."""
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda v, _pos: f"{v:g}{suffix}" if v > 0 else "")


def _log_axis(ax: Axes, which: str, lo: float, hi: float, suffix: str = "x") -> None:
    """A log axis from lo to hi with ticks from ratio_ticks, labelled plainly (0.8x, 20)."""
    from matplotlib.ticker import FixedLocator, NullFormatter

    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    (ax.set_xlim if which == "x" else ax.set_ylim)(lo, hi)
    axis.set_major_locator(FixedLocator(ratio_ticks(lo, hi)))
    axis.set_major_formatter(_plain_log_formatter(suffix))
    axis.set_minor_formatter(NullFormatter())


def _save(fig: Figure, path: Path, caption: str) -> None:
    import textwrap

    fig.text(0.01, 0.01, "\n".join(textwrap.wrap(caption, 130)), fontsize=8, color="#444444", va="bottom")
    lines = 1 + len(caption) // 130
    fig.tight_layout(rect=(0, 0.04 * lines, 1, 1))
    fig.savefig(path, dpi=DPI)
    import matplotlib.pyplot as plt

    plt.close(fig)
