"""The cycle-approximate AI Core simulator: per-core pipes, races, costs, multi-core timing."""
