"""The expert kernel library: source-text generators of DSL kernel files, parameterised by
schedule knobs and the target preset.

The reference model times its expert baseline with them (`VENDOR_KNOBS`); the offline
synthesizer reuses them with other knobs and fused op chains.

- `elementwise_source(ElementwiseSpec, Knobs)`: a fused chain of elementwise ops with
  row / column / scalar / grouped broadcast;
- `row_source(RowSpec, Knobs)`: last-axis sum/mean/max/min, softmax, log-softmax,
  layer norm, RMS norm;
- `matmul_source(MatmulSpec, CubeKnobs)`: matmul on the cube, optionally batched.

Each generator can also emit only its definitions (`with_forward=False`) under its spec's
`name`, and `elementwise_tiling` / `row_tiling` give the tile the host code will use.
"""

from sage.kernels.library.elementwise import ElementwiseSpec, elementwise_source, elementwise_tiling
from sage.kernels.library.knobs import VENDOR_CUBE_KNOBS, VENDOR_KNOBS, CubeKnobs, Knobs
from sage.kernels.library.matmul import MatmulSpec, matmul_source
from sage.kernels.library.rowwise import REDUCTIONS, RowOp, RowSpec, row_source, row_tiling
from sage.kernels.library.source import HEADER, KERNEL_DTYPES, LIB_DTYPES, dsl_dtype, suffixed

__all__ = [
    "CubeKnobs", "ElementwiseSpec", "HEADER", "KERNEL_DTYPES", "Knobs", "LIB_DTYPES", "MatmulSpec", "REDUCTIONS",
    "RowOp", "RowSpec", "VENDOR_CUBE_KNOBS", "VENDOR_KNOBS", "dsl_dtype", "elementwise_source", "elementwise_tiling",
    "matmul_source", "row_source", "row_tiling", "suffixed",
]
