"""Masked lanes (sage/npu/sim/masks.py): an `if` the lanes disagree on runs both arms in the group.

Each kernel runs block by block and in lane groups (`both`, from test_lanes.py: outputs,
every block's records and errors must be identical); the partitions show whether the group
stayed whole (one try) or split as before.
"""

from __future__ import annotations

import numpy as np

from tests.npu.test_lanes import both, data, rows_kernel

EXP = "            Exp(f, f, self.d)\n"


def branch(arms: str) -> str:
    """The rows kernel with `arms` (indented as the loop body) just before its Exp."""
    return rows_kernel().replace(EXP, arms + EXP)


def mixed() -> np.ndarray:
    """8 blocks of 4 rows whose row maxima (after the kernel's shift, the sign of the row max)
    are positive in some rows of every block and negative in others."""
    x = -np.abs(data(32))
    for row in range(32):
        if row % 3 != 1:
            x[row, row % 7] = 1.5
    return x


def expected(x: np.ndarray, yes, no) -> np.ndarray:
    """The rows kernel by hand in float32: (x - max) / (|max| + 1), then `yes` or `no` by the
    sign of max, then exp, rounded to fp16."""
    f = x.astype(np.float32)
    top = f.max(axis=1, keepdims=True)
    g = (f - top) * np.float32(1.0 / (np.abs(top) + 1.0))
    return np.exp(np.where(top > 0, yes(g), no(g))).astype(np.float16)


def test_arms_that_each_issue_one_vector_instruction_keep_the_group(partitions):
    x = mixed()
    run = both(branch("            if top > 0:\n"
                      "                Muls(f, f, 2.0, self.d)\n"
                      "            else:\n"
                      "                Adds(f, f, -1.0, self.d)\n"), [x])
    assert run.error is None and partitions == [None, [8]]  # (block by block, then one try: one group)
    want = expected(x, lambda g: g * 2, lambda g: g - 1)
    assert np.allclose(run.outputs[0].astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=1e-3)
    # the records of a masked `if` are each lane's own: the instruction it took, its name (and
    # every row has one Muls more, the kernel's scaling; Adds(-top) is once per row too)
    names = [r[11] for b in run.trace.launches[0].blocks for r in b.records]
    positive = int(np.sum(x.max(axis=1) > 0))
    assert (names.count("Muls"), names.count("Adds")) == (32 + positive, 32 + 32 - positive)


def test_several_calls_per_arm_and_a_per_lane_scalar_operand(partitions):
    x = mixed()
    run = both(branch("            if top > 0:\n"
                      "                Muls(f, f, top, self.d)\n"
                      "                Maxs(f, f, -3.0, self.d)\n"
                      "            else:\n"
                      "                Mins(f, f, top, self.d)\n"
                      "                Adds(f, f, top, self.d)\n"), [x])
    assert run.error is None and partitions == [None, [8]]


def test_a_branch_on_the_block_index_runs_both_arms_too(partitions):
    run = both(branch("            if GetBlockIdx() % 3 == 0:\n"
                      "                Muls(f, f, 0.5, self.d)\n"
                      "            else:\n"
                      "                Adds(f, f, 0.25, self.d)\n"), [data(32)])
    assert run.error is None and partitions == [None, [8]]


def test_arms_that_read_different_bytes_split_the_group(partitions):
    # Duplicate reads nothing, Muls reads f: the race checks differ, so the records' shapes do
    run = both(branch("            if GetBlockIdx() % 3 == 0:\n"
                      "                Muls(f, f, 0.5, self.d)\n"
                      "            else:\n"
                      "                Duplicate(f, 0.25, self.d)\n"), [data(32)])
    assert run.error is None and partitions == [None, [8], [3, 5]]


def test_arms_of_different_shapes_split_the_group_as_before(partitions):
    # two instructions on one side, one on the other: the lanes' records differ in number
    run = both(branch("            if top > 0:\n"
                      "                Muls(f, f, 2.0, self.d)\n"
                      "                Muls(f, f, 2.0, self.d)\n"
                      "            else:\n"
                      "                Adds(f, f, -1.0, self.d)\n"), [mixed()])
    assert run.error is None and partitions[1] == [8] and len(partitions) > 2


def test_arms_on_different_bytes_split_the_group(partitions):
    # the same instruction on different lengths: the bytes written differ, so the shapes do
    run = both(branch("            if top > 0:\n"
                      "                Muls(f, f, 2.0, self.d)\n"
                      "            else:\n"
                      "                Muls(f, f, 2.0, self.d // 2)\n"), [mixed()])
    assert run.error is None and partitions[1] == [8] and len(partitions) > 2


def test_an_arm_calling_kernel_code_is_not_masked(partitions):
    # a kernel's own method could change Python state for every lane: under a mask it diverges
    body = branch("            if top > 0:\n"
                  "                self.scale(f)\n"
                  "            else:\n"
                  "                Adds(f, f, -1.0, self.d)\n").replace(
        "    def Process(self):\n",
        "    def scale(self, f):\n"
        "        self.scaled = self.scaled + 1\n"
        "        Muls(f, f, 2.0 + self.scaled, self.d)\n\n"
        "    def Process(self):\n        self.scaled = 0\n")
    run = both(body, [mixed()])
    assert run.error is None and partitions[1] == [8] and len(partitions) > 2


def test_an_arm_that_assigns_is_not_masked(partitions):
    run = both(branch("            if top > 0:\n"
                      "                s = 2.0\n"
                      "            else:\n"
                      "                s = 0.5\n"
                      "            Muls(f, f, s, self.d)\n"), [mixed()])
    assert run.error is None and partitions[1] == [8] and len(partitions) > 2


def test_an_error_in_one_arm_is_the_block_by_block_error():
    # the arm some lanes take reads past the buffer: the error, its message and line are those
    # of the block that runs it alone
    run = both(branch("            if top > 0:\n"
                      "                Muls(f, f, 2.0, self.d * 8)\n"
                      "            else:\n"
                      "                Adds(f, f, -1.0, self.d)\n"), [mixed()])
    assert run.error is not None and run.error.type == "BoundsError"


def test_the_same_if_outside_a_lane_group_is_the_plain_if():
    # host code and lone blocks: the arm Python picks, and only that one
    body = branch("            if top > 0:\n"
                  "                Muls(f, f, 2.0, self.d)\n"
                  "            else:\n"
                  "                Adds(f, f, -1.0, self.d)\n").replace(
        "    y = empty_like(x)\n",
        "    y = empty_like(x)\n    if rows > 1:\n        print('rows', rows)\n    else:\n        print('one row')\n")
    run = both(body, [mixed()])
    assert run.error is None and run.printed == "rows 32\n"


def test_which_ifs_the_compiler_runs_under_masks():
    import ast

    from sage.npu.masked_if import eligible

    def one(src: str) -> bool:
        return eligible(ast.parse(src).body[0])
    assert one("if t:\n    Mins(y, x, 1.0, n)\nelse:\n    Adds(y, x, 0.0, n)")
    assert one("if t:\n    self.ops.Mins(y, x[i * d], -s, n)\n    Exp(y, y, n)\nelse:\n    Adds(y, x, s + 1, n)")
    assert not one("if t:\n    Mins(y, x, 1.0, n)")                                  # no else: nothing to match
    assert not one("if t:\n    Mins(y, x, 1.0, n)\nelif u:\n    Adds(y, x, 0.0, n)\nelse:\n    Exp(y, x, n)")
    assert not one("if t:\n    s = 1.0\nelse:\n    s = 0.0")                             # a binding
    assert not one("if t:\n    Mins(y, x, f(1.0), n)\nelse:\n    Adds(y, x, 0.0, n)")   # a call in an argument
    assert not one("if t:\n    Mins(y, x, [g for g in h], n)\nelse:\n    Adds(y, x, 0.0, n)")
    assert not one("if t:\n    Mins(**kw)\nelse:\n    Adds(y, x, 0.0, n)")
    assert not one("if t:\n    ops[0](y, x)\nelse:\n    Adds(y, x, 0.0, n)")            # callee not a name/attribute
    assert not one("if t:\n    Mins(y, x, (s := 2), n)\nelse:\n    Adds(y, x, 0.0, n)")
