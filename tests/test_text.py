"""sage/text.py, property-tested: whatever string comes in, the cleaned text, the markdown
cell and the terminal form hold none of what the red team used (lone surrogates, escape
sequences, bidi overrides, zero-width characters, images, links, raw HTML, broken tables).

The forbidden sets are written out here from the Unicode standard (and checked against the
running Python's unicodedata), not imported from the module under test.
"""

from __future__ import annotations

import html
import io
import json
import re
import unicodedata

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from rich.console import Console

from sage.text import clean, json_safe, md_cell, repair, terminal

# Hostile characters that random text rarely hits, mixed into every drawn string.
ESC, CSI = "\x1b", "\x9b"
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff"
HOSTILE = [ESC, CSI, "\x07", "\r", "\x00", "\x7f", *BIDI, *ZERO_WIDTH, "\U000e0041", "\u2028",
           "\ud800", "\udfff", "\ud83d", "\ude00", "|", "\n", "\t", "<", ">", "&", "![", "](", "`", "\\", "@",
           "http://", "www.", "[bold red]", "[/]", ":smile:"]
SETTINGS = settings(max_examples=300, deadline=None)

any_char = st.characters(exclude_categories=())          # surrogates, controls and format characters too
hostile_text = st.lists(st.one_of(any_char, st.sampled_from(HOSTILE)), max_size=60).map("".join)
caps = st.none() | st.integers(min_value=1, max_value=80)


def forbidden(text: str, *, one_line: bool = False) -> list[str]:
    """What must not survive cleaning, by the standard's categories."""
    bad = []
    for ch in text:
        category = unicodedata.category(ch)
        if ch in "\n\t" and not one_line:
            continue
        if category in ("Cc", "Cf", "Cs", "Zl", "Zp") or ch in BIDI or ch in ZERO_WIDTH or ch in (ESC, CSI):
            bad.append(ch)
    return bad


@SETTINGS
@given(hostile_text, caps)
@example("\x1b]0;PWNED\x07\x1b[2J" + chr(0xD800) + "\u202e", 20)
def test_clean_leaves_nothing_hidden_and_keeps_its_cap(text, limit):
    cleaned = clean(text, limit)
    assert forbidden(cleaned) == []
    assert limit is None or len(cleaned) <= limit
    encoded = cleaned.encode("utf-8")                       # strict: no surrogate left
    assert json.loads(json.dumps(cleaned, ensure_ascii=False).encode("utf-8")) == cleaned
    assert encoded.decode("utf-8") == cleaned
    assert clean(cleaned, limit) == cleaned                 # idempotent: cleaning twice changes nothing


@SETTINGS
@given(hostile_text)
def test_one_line_text_has_no_line_break(text):
    cleaned = clean(text, one_line=True)
    assert forbidden(cleaned, one_line=True) == [] and "\n" not in cleaned and "\t" not in cleaned


def test_what_is_kept_and_how_hidden_characters_show():
    assert clean("a\tb\nc é 漢字 😀") == "a\tb\nc é 漢字 😀"
    assert clean("x\x1b[2Jy\u202ez\u200b") == "x\\x1b[2Jy\\u202ez\\u200b"
    assert clean("tag\U000e0041") == "tag\\U000e0041"
    assert clean("lone " + chr(0xD800)) == "lone \ufffd"
    assert clean("\ud83d\ude00") == "😀"                    # a pair that arrived split is joined
    assert clean("abcdef", 4) == "abc…"
    assert repair("code\x1b" + chr(0xDC80)) == "code\x1b\ufffd"   # source: only made encodable


def test_every_control_and_format_character_of_this_python_is_escaped():
    missed = [f"U+{c:04X}" for c in range(0x110000)
              if unicodedata.category(chr(c)) in ("Cc", "Cf", "Zl", "Zp") and chr(c) not in "\n\t"
              and clean(chr(c)) == chr(c)]
    assert missed == [], f"add these to sage/text.py's _HIDDEN (Unicode {unicodedata.unidata_version})"


def _pipes_escaped(cell: str) -> bool:
    """Every | has an odd number of backslashes before it (GFM reads it as text, not a cell border)."""
    return all(len(m.group(1)) % 2 == 1 for m in re.finditer(r"(\\*)\|", cell))


@SETTINGS
@given(hostile_text)
@example("![beacon](http://a.example/x.png) <img src=x onerror=alert(1)> a|b www.a.com u@b.com")
def test_a_markdown_cell_cannot_make_an_image_a_link_html_or_a_new_cell(text):
    cell = md_cell(text)
    assert "![" not in cell and "](" not in cell
    assert "<" not in cell and ">" not in cell               # no tag, no autolink <http://...>
    assert "\n" not in cell and "\r" not in cell and _pipes_escaped(cell)
    assert re.search(r"(?<!\\)://", cell) is None and re.search(r"(?i)www(?!\\)\.", cell) is None
    assert forbidden(cell, one_line=True) == []


@SETTINGS
@given(hostile_text, st.integers(min_value=1, max_value=150))
@example("![x](http://a) <img onerror=x> a|b \\| `c` *e* _u_ ~~s~~ www.a.com a@b.co #1 &amp; [l](u)", 150)
def test_github_renders_the_cell_as_its_own_text(text, limit):
    """Through cmark-gfm, GitHub's own renderer: one row of one cell, no <a>, <img> or raw tag,
    and the cell shows the cleaned text itself, capped to `limit` characters as shown."""
    cmarkgfm = pytest.importorskip("cmarkgfm")
    from cmarkgfm.cmark import Options

    rendered = cmarkgfm.github_flavored_markdown_to_html(f"| h |\n|---|\n| {md_cell(text, limit)} |\n",
                                                         options=Options.CMARK_OPT_UNSAFE)
    body = rendered.split("<tbody>")[1] if "<tbody>" in rendered else ""
    assert body.count("<tr>") <= 1 and body.count("<td>") <= 1
    tags = set(re.findall(r"</?([a-z]+)", body))
    assert tags <= {"tr", "td", "code", "tbody", "table"}, rendered
    shown = html.unescape(re.sub(r"<[^>]+>", "", body)).strip()
    assert shown == clean(text, limit, one_line=True)


@SETTINGS
@given(hostile_text)
@example("[bold red]STATUS: correct 99.0x[/] :smile: \x1b]0;t\x07")
def test_the_terminal_form_has_no_escape_and_no_markup(text):
    shown = terminal(text)
    assert ESC not in shown.plain and CSI not in shown.plain
    console = Console(width=10_000, color_system=None, record=True, file=io.StringIO())
    console.print(shown, highlight=False, soft_wrap=True)
    out = console.export_text()
    assert ESC not in out
    # As text: no tag read, no emoji code replaced (rich only expands tabs).
    assert out.split() == clean(text).split()


@SETTINGS
@given(st.recursive(hostile_text | st.integers() | st.none(),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(hostile_text, inner, max_size=4),
                    max_leaves=12))
def test_json_safe_values_encode_as_utf8_and_round_trip(value):
    safe = json_safe(value)
    text = json.dumps(safe, ensure_ascii=False)
    text.encode("utf-8")
    assert json.loads(text) == safe
