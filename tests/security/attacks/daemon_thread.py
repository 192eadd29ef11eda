# class: daemons
# tries: a daemon thread that keeps running after the verdict
# expect: refused SandboxError

import threading
from sage.npu.ascendc import *


def forward(x, canary, port):
    threading.Thread(target=lambda: None, daemon=True).start()
    return empty_like(x)
