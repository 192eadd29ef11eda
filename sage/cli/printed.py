"""What a kernel printed (print, printf, DumpTensor), shown with its result.

The kernel's output is captured in a bounded buffer by the simulator (never stdout); here
it is shown per case, truncated to a screenful, with `--verbose`; without it, one line says
how much there is. `--json` always carries all of it (as captured) under "printed".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.padding import Padding

from sage.text import terminal

SHOWN_LINES = 20
SHOWN_CHARS = 2000


def printed_by_case(cases: Sequence[Any]) -> dict[str, str]:
    """Case index -> what the kernel printed on it (cases that printed nothing are left out)."""
    return {str(c.index): c.printed for c in cases if c.printed}


def truncated(text: str, lines: int = SHOWN_LINES, chars: int = SHOWN_CHARS) -> str:
    kept = text[:chars].splitlines()[:lines]
    shown = "\n".join(kept)
    rest = len(text.splitlines()) - len(kept)
    if len(shown) < len(text.rstrip("\n")):
        shown += f"\n[… {max(rest, 1)} more line(s), {len(text) - len(shown)} more characters: see --json]"
    return shown


def show_printed(console: Console, cases: Sequence[Any], verbose: bool) -> None:
    printed = printed_by_case(cases)
    if not printed:
        return
    if not verbose:
        lines = sum(len(t.splitlines()) for t in printed.values())
        console.print(f"the kernel printed {lines} line(s) on {len(printed)} case(s): see them with --verbose",
                      highlight=False)
        return
    for index, text in printed.items():
        console.print(f"printed by the kernel on case {index}:", style="bold", highlight=False)
        # Cleaned on entry, again for the terminal, and indented: no line the kernel printed
        # (wrapped or not) starts where sage's own lines do.
        console.print(Padding(terminal(truncated(text)), (0, 0, 0, 2)), highlight=False)
