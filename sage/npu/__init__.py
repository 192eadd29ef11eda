"""The machine: hardware presets, the Ascend-C-style kernel DSL, sandbox and AI Core simulator."""
