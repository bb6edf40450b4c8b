"""Live snapshots from NVML: the only package that imports pynvml."""
