# class: file writes
# tries: pathlib / shutil / mmap to rewrite the canary
# expect: refused SandboxError

from pathlib import Path
from sage.npu.ascendc import *


def forward(x, canary, port):
    Path(canary).write_text("escaped")
    return empty_like(x)
