# class: reward hack / timing (legality)
# tries: negative repeat strides: numpy wraps the indices to the tensor's end while the race checker records a span below it, so V reads what MTE2 wrote with no sync and the replay overlaps them
# run: evaluate tests/fixtures/tasks/relu.py
# expect: error RaceError|BoundsError
# known: sage/npu/ascendc/_vecbase.py: repeat_index/indexed accept negative strides; numpy wraps negative indices to the tensor's end while the recorded span lies below it, so the race check and the replay's dependencies miss the access (fix: BoundsError for a negative index, i.e. lo < 0)

from sage.npu.ascendc import *

BLOCKS = 32


@kernel
def k(x, z, per_block):
    start = GetBlockIdx() * per_block
    half = per_block // 2
    pipe = TPipe()
    for h in range(2):
        xg = GlobalTensor()
        xg.SetGlobalBuffer(x, start + h * half, half)
        zg = GlobalTensor()
        zg.SetGlobalBuffer(z, start + h * half, half)
        b = TBuf(TPosition.VECCALC)
        pipe.InitBuffer(b, half * 4)
        t = b.Get(float32)
        DataCopy(t, xg, half)
        # No MTE2 -> V sync. Lanes 8..15 (block 1 of each repeat) with block and repeat stride -1
        # touch elements -8r-8 .. -8r-1: numpy reads the whole tensor from its end, the recorded
        # span lies below it.
        Relu(t, t, (0xFF00, 0), half // 8, UnaryRepeatParams(-1, -1, -1, -1))
        SetFlag(HardEvent.V_MTE3, EVENT_ID0)
        WaitFlag(HardEvent.V_MTE3, EVENT_ID0)
        SetFlag(HardEvent.MTE2_MTE3, EVENT_ID1)
        WaitFlag(HardEvent.MTE2_MTE3, EVENT_ID1)
        DataCopy(zg, t, half)


def forward(x):
    z = empty_like(x)
    k[BLOCKS](x, z, x.numel() // BLOCKS)
    return z
