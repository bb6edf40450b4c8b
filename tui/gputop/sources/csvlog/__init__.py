"""`nvidia-smi --query-gpu=... --format=csv` logs read as recordings (``CsvRecording``)."""

from gputop.sources.csvlog.recording import CsvRecording, looks_like

__all__ = ["CsvRecording", "looks_like"]
