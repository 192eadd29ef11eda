"""Shape-generic kernels: one kernel text per code path, its sizes and tiling computed by the host."""
