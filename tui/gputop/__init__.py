"""gputop: a terminal UI for NVIDIA GPUs."""

__version__ = "0.1.0"
