"""`gputop --demo`: replay the capture installed with the package, from any directory."""

from __future__ import annotations

from pathlib import Path

DEMO_CAPTURE = Path(__file__).resolve().parent.parent / "data" / "rtx3090x4-procs-v12.xml"
"""A real 4x RTX 3090 capture with processes (package data, a copy of the one in
``snapshots/``), so the command works wherever gputop is installed."""
