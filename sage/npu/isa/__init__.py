"""Instruction tables of the target chip (data, with sources) and the legality checks on them."""

from sage.npu.isa.table import IsaTable, load_table

__all__ = ["IsaTable", "load_table"]
