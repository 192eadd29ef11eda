# class: exec
# tries: import the simulator's private modules through the DSL package (host._session, handles)
# expect: refused SandboxError

from sage.npu.ascendc.host import set_session
from sage.npu.ascendc import *


def forward(x, canary, port):
    set_session(None)
    return empty_like(x)
