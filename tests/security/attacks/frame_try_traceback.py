# class: frame walk
# tries: catch a simulator error and walk exc.__traceback__.tb_frame to the simulator's locals
# expect: refused SandboxError

from sage.npu.ascendc import *


def forward(x, canary, port):
    try:
        x.numpy()
    except Exception as exc:
        print(exc.__traceback__.tb_frame.f_locals)
    return empty_like(x)
