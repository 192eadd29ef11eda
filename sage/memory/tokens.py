"""An offline token estimate for the resident-rule budget.

Counting with a real BPE tokenizer would need a download and tie the budget to one model
family. This estimator is deterministic and close to GPT-style BPE counts on English and
code-like text: a word of up to six letters is one token, a longer word about one token
per five letters, digit runs one token per three digits (as tiktoken groups them), and
every punctuation mark one token.
"""

from __future__ import annotations

import math
import re

_PIECES = re.compile(r"[A-Za-z]+|\d+|[^\sA-Za-z\d]")
_SHORT_WORD = 6
_CHARS_PER_TOKEN = 5
_DIGITS_PER_TOKEN = 3


def count_tokens(text: str) -> int:
    total = 0
    for piece in _PIECES.findall(text):
        if piece.isdigit():
            total += math.ceil(len(piece) / _DIGITS_PER_TOKEN)
        elif piece[0].isalpha():
            total += 1 if len(piece) <= _SHORT_WORD else math.ceil(len(piece) / _CHARS_PER_TOKEN)
        else:
            total += 1
    return total
