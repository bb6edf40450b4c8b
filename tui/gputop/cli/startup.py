"""What gputop does while it starts: garbage collection held off, dataclasses' code cached.

``begin`` and ``end`` bracket the start (the console entry point begins it before gputop's
modules are imported; the TUI ends it after its first frame, a headless run as it begins):
collection is held (below), and the methods ``dataclasses`` writes for each class made in
that window are compiled once and read back by later starts (``code_cache.py``).

Start-up builds a few hundred thousand objects that live as long as the process (Textual,
Rich, the model's classes, the first snapshot). With the collector on, the young
generations fill over and over while they are built and each full collection walks all of
them again: tens of milliseconds of a first frame spent proving that nothing is garbage.
So the console entry point holds collection until the first frame is on screen (or a
headless run begins), then collects once, freezes what is left (``gc.freeze``: later
full collections skip it) and collects again, with a larger young generation: each tick
allocates a few thousand short-lived objects that reference counting frees anyway, and with
Python's default of 700 the collector ran about once a tick for nothing (0.55 ms a tick on
the 8x7 MIG box; 0.13 ms with 20,000).
"""

from __future__ import annotations

import gc

from gputop.cli import code_cache

YOUNG_GENERATION = 20_000
"""Allocations between two collections of the youngest generation (Python's default: 700)."""

_held = False


def begin() -> None:
    """The start begins: collection held, dataclasses' code served from the cache."""
    hold_collection()
    code_cache.begin()


def end() -> None:
    """The start is over: the code compiled anew kept for the next start, collection
    released (and what start-up built frozen). Nothing if not begun."""
    # The cache's memory first, given back before the collection and freeze that follow.
    try:
        code_cache.end()
    finally:
        release_collection()


def hold_collection() -> None:
    """Stop automatic collection until ``release_collection``."""
    global _held
    if gc.isenabled():
        gc.disable()
        _held = True


def release_collection() -> None:
    """Free start-up's garbage, freeze what start-up built and collect again; does nothing
    unless held.

    Collected before the freeze: start-up leaves garbage in reference cycles (about 35,000
    objects of 116,000 on the 8x7 MIG box), and frozen it would never be freed. The
    collection costs about 80 ms of CPU once, after the first frame; freed, that memory is
    what the running app allocates into, 0.25 MiB less RSS on 1 GPU, 0.5 MiB on 8x7.
    """
    global _held
    if _held:
        _held = False
        gc.collect()
        gc.freeze()
        _, middle, old = gc.get_threshold()
        gc.set_threshold(YOUNG_GENERATION, middle, old)
        gc.enable()
