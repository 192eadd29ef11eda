"""sage: a command-line agent that writes Ascend-C-style NPU kernels."""

__version__ = "0.1.0"
