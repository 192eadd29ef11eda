"""The machine: hardware presets, the Ascend-C-style kernel DSL, sandbox and AI Core simulator.

Entry points: ``sage.npu.ascendc`` (the DSL a kernel file imports), ``sage.npu.execute.run_kernel_source``
(run a kernel file in-process), ``sage.npu.sandbox.run_sandboxed`` (the same for untrusted text),
``sage.npu.hardware.load_preset``, ``python -m sage.npu.dslref`` (the reference card, docs/dsl.md) and
``python -m sage.npu.speed`` (simulated instructions per second).
"""
