"""The roofline fraction as every command and report shows it: one word, one figure.

Defined in docs/evaluation.md ("Roofline fraction"): the reference forward's essential-work
bound over the kernel's device work, launch costs excluded from both, at most 1; a task's
is the mean over its correct timed cases. Shown with two decimals and the bound that set
it, "0.67 (memory bound)", never as a percentage of some other roofline.
"""

from __future__ import annotations


def roofline_text(fraction: float | None, bound: str | None = None) -> str:
    """"0.67 (memory bound)", "0.67" when the bound is not known, "-" when there is no figure."""
    if fraction is None:
        return "-"
    return f"{fraction:.2f} ({bound} bound)" if bound else f"{fraction:.2f}"
