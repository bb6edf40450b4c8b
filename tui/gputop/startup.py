"""Garbage collection held off while gputop starts.

Start-up builds a few hundred thousand objects that live as long as the process (Textual,
Rich, the model's classes, the first snapshot). With the collector on, the young
generations fill over and over while they are built and each full collection walks all of
them again: tens of milliseconds of a first frame spent proving that nothing is garbage.
So the console entry point holds collection until the first frame is on screen (or a
headless run begins), then freezes what exists (``gc.freeze``: later full collections
skip it) and collects as usual from there.
"""

from __future__ import annotations

import gc

_held = False


def hold_collection() -> None:
    """Stop automatic collection until ``release_collection``."""
    global _held
    if gc.isenabled():
        gc.disable()
        _held = True


def release_collection() -> None:
    """Freeze what start-up built and collect as usual again; does nothing unless held."""
    global _held
    if _held:
        _held = False
        gc.freeze()
        gc.enable()
