"""Library kernels: source-text generators of DSL kernel files, parameterised by schedule knobs.

The reference model times the vendor's eager kernels with them (`VENDOR_KNOBS`); the offline
synthesizer reuses them with other knobs and fused op chains.

- `elementwise_source(ElementwiseSpec, Knobs)`: a fused chain of elementwise ops with
  row / column / scalar broadcast;
- `row_source(RowSpec, Knobs)`: last-axis sum/mean/max/min, softmax, log-softmax,
  layer norm, RMS norm;
- `matmul_source(MatmulSpec, CubeKnobs)`: matmul on the cube, optionally batched.

Each generator can also emit only its definitions (`with_forward=False`) under its spec's
`name`, and `elementwise_tiling` / `row_tiling` give the tile the host code will use.
"""

from sage.bench.library.chain import Const, Expr, Inp, Op, const, inp, op, render
from sage.bench.library.elementwise import ElementwiseSpec, elementwise_source, elementwise_tiling
from sage.bench.library.knobs import VENDOR_CUBE_KNOBS, VENDOR_KNOBS, CubeKnobs, Knobs
from sage.bench.library.matmul import MatmulSpec, matmul_source
from sage.bench.library.rowwise import RowSpec, row_source, row_tiling

__all__ = [
    "Const", "CubeKnobs", "ElementwiseSpec", "Expr", "Inp", "Knobs", "MatmulSpec", "Op", "RowSpec",
    "VENDOR_CUBE_KNOBS", "VENDOR_KNOBS", "const", "elementwise_source", "elementwise_tiling", "inp",
    "matmul_source", "op", "render", "row_source", "row_tiling",
]
