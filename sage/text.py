"""Text from outside sage, cleaned once where it enters and escaped again for each sink.

Text a kernel prints or raises, an LLM writes, a task file or an imported memory carries
is hostile: a lone surrogate makes every UTF-8 encoder raise (one error message aborted a
whole bench run), an escape sequence retitles or clears a terminal, a bidi override or a
zero-width character makes a line read differently from what it holds, a markdown image
in a report fetches a beacon. So, on entry (`clean`):

- lone surrogates become U+FFFD (a surrogate pair that arrived split is joined);
- C0 and C1 controls (but newline and tab), DEL, and the invisible format characters
  (bidi embeddings, overrides and isolates, zero-width spaces and joiners, the BOM, tag
  characters, line and paragraph separators) are shown as escapes: ``\\x1b``, ``\\u202e``;
- the text is capped (the caps below, in characters of the cleaned text).

Then each sink escapes for itself: `terminal` (a rich Text, never parsed as markup),
`md_cell` (a report.md table cell: no image, link, raw HTML or table break), `json_safe`
(every string encodable as UTF-8). docs/security.md "Text hygiene" says where each is used.

Outside the import-linter layers (like sage/config.py), so every layer may use it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.text import Text

ERROR_CHARS = 4096          # an error message or a reason
TITLE_CHARS = 120           # a lesson's title
NOTE_CHARS = 300            # a lesson's note (its advice)
TAG_CHARS = 100             # one tag
PRINTED_CHARS = 64 * 1024   # what a kernel printed on one case
SOURCE_CHARS = 32 * 1024    # kernel source kept in memory (an artifact, never read as text)
CELL_CHARS = 120            # a report.md cell

MORE = "…"                  # ends a capped text

_SURROGATE = re.compile("[\ud800-\udfff]")
_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
# Shown as escapes: C0 but tab and newline, DEL and C1; every format (Cf) character of
# Unicode 15.1, line and paragraph separators, and the supplementary variation selectors
# (invisible, used to smuggle text past a reader). tests/test_text.py checks the list
# against the running Python's unicodedata.
_HIDDEN = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0000-\U000e007f\U000e0100-\U000e01ef]"
)
_SPACE_RUN = re.compile(r"\s+")


def _joined(match: re.Match[str]) -> str:
    high, low = match.group()
    return chr(0x10000 + ((ord(high) - 0xD800) << 10) + (ord(low) - 0xDC00))


def repair(text: str) -> str:
    """`text` encodable as UTF-8: surrogate pairs joined, lone surrogates as U+FFFD.
    For text whose bytes matter (kernel source): nothing else changes. No codec is used: the
    sandbox's locked-down child cannot import one it has not loaded yet."""
    if not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub("\ufffd", _PAIR.sub(_joined, text))


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def cap(text: str, limit: int | None) -> str:
    """`text` cut to `limit` characters, the cut marked with "…"."""
    if limit is None or len(text) <= limit:
        return text
    return text[:max(limit - len(MORE), 0)] + MORE if limit >= len(MORE) else text[:limit]


def clean(text: Any, limit: int | None = None, *, one_line: bool = False) -> str:
    """Hostile text as safe text: repaired, hidden characters as escapes, capped to `limit`.
    `one_line`: every run of whitespace (newlines and tabs included) becomes one space, for
    titles, tags and notes. Idempotent: cleaning clean text changes nothing."""
    text = _HIDDEN.sub(_escape, repair(text if isinstance(text, str) else str(text)))
    if one_line:
        text = _SPACE_RUN.sub(" ", text).strip()
    return cap(text, limit)


def clean_optional(text: str | None, limit: int | None = None, *, one_line: bool = False) -> str | None:
    return None if text is None else clean(text, limit, one_line=one_line)


def json_safe(value: Any) -> Any:
    """`value` with every string (keys included) in dicts, lists and tuples repaired, so that
    any JSON encoder writes it as UTF-8. Only surrogates change: JSON escapes the rest itself.
    A copy, made without recursion: an imported document may be nested deeper than the stack."""
    if not isinstance(value, (dict, list, tuple)):
        return repair(value) if isinstance(value, str) else value
    result: Any = {} if isinstance(value, dict) else []
    work = [(value, result)]
    while work:
        source, target = work.pop()
        for key, item in (source.items() if isinstance(source, dict) else enumerate(source)):
            if isinstance(item, (dict, list, tuple)):
                copied: Any = {} if isinstance(item, dict) else []
                work.append((item, copied))       # filled later; already in its place
            else:
                copied = repair(item) if isinstance(item, str) else item
            if isinstance(target, dict):
                target[repair(key) if isinstance(key, str) else key] = copied
            else:
                target.append(copied)
    return result


def terminal(text: Any, style: str = "", limit: int | None = None, *, one_line: bool = False) -> Text:
    """The terminal's form: a rich Text of the cleaned text. A Text is never parsed as markup
    (no [bold], no :emoji: codes), and the cleaned text holds no escape character. `one_line`
    for a message shown on a line of sage's own, where a newline could start a fake one."""
    from rich.text import Text

    return Text(clean(text, limit, one_line=one_line), style=style)


# A report.md cell. Backslash escapes for what markdown would read, and only where it would
# read it, so names stay legible in the file (level1/10_layer_norm, .cuda() (line 18)): the
# backslash and backtick (code spans), * and ~ (emphasis, strikethrough), _ unless inside a
# word, [ and ] (links), ! before [ and ( after ] (so neither "![" nor "](" is ever written),
# the pipe (the table); entities for what HTML would read (< > &); and the three triggers of
# GitHub's autolinks broken: "://" (http, https, ftp), "www." and "@" (e-mail, which GitHub
# links through any backslash escape, so the "@" goes into a code span).
_MD_SPECIAL = re.compile(r"[\\`*~\[\]|<>&]|(?<!\w)_|_(?!\w)|!(?=\[)|(?<=\])\(|@+|:(?=//)|(?<=[wW][wW][wW])\.")
_MD_ENTITIES = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}


def _md_escape(match: re.Match[str]) -> str:
    found = match.group()
    if found[0] == "@":
        return f"`{found}`"          # one span per run: `@``@` would not close
    return _MD_ENTITIES.get(found, "\\" + found)


def md_cell(text: Any, limit: int = CELL_CHARS) -> str:
    """`text` as one cell of a markdown table: one line, capped to `limit` characters before
    escaping; renders as the text itself, never as an image, a link, HTML or a new cell."""
    plain = clean(text, limit, one_line=True)
    return _MD_SPECIAL.sub(_md_escape, plain)
