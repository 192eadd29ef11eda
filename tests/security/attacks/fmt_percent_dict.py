# class: format-string walk
# tries: old-style %-formatting with a mapping key naming an attribute path (it does not walk: the result is only a repr)
# expect: refused OutputSpecError

from sage.npu.ascendc import *


def forward(x, canary, port):
    text = "%(a)s %(b)r" % {"a": x, "b": forward}
    print(text)
    return x  # what it learnt is a repr; returning the input is refused on its own
