# class: parent denial of service
# tries: 40,000 PipeBarrier(PIPE_ALL) = 280,000 records that count as zero instructions, so the instruction budget never stops them; the parent decodes and replays every one (400,000 barriers: 2.4 GB and 49 s in the parent under the default limits)
# expect: refused KernelTimeout
# known: sage/npu/sim/core.py: only NORMAL records count against the instruction budget (CoreState.instr), SYNC and BARRIER records are free, so a kernel can make the parent decode and replay millions of them (fix: count every record, or cap records per run)

from sage.npu.ascendc import *


@kernel
def k(x, z):
    for i in range(40000):
        PipeBarrier(PIPE_ALL)


def forward(x, canary, port):
    z = empty_like(x)
    k[1](x, z)
    return z
