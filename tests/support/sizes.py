"""Walking an app through terminal sizes, as a SIGWINCH does, and reading the frame it drew.

A sweep of every size (hundreds of them) runs with ``--slow``; the default run walks the
layout's edges and a sample of the rest picked with a fixed seed, in the sweep's order, so a
failure names a size that fails again on the next run.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterable, Sequence

import pytest
from textual.app import App
from textual.events import Resize
from textual.geometry import Size
from textual.pilot import Pilot

Step = tuple[int, int]
"""(width, height)."""

SEED = 25
SWEEPS = [
    pytest.param(False, id="sampled"),
    pytest.param(True, id="every-size", marks=pytest.mark.slow),
]
"""``@pytest.mark.parametrize("every", SWEEPS)``: the sampled sweep, and every size (slow)."""

LAYOUT_WAIT_S = 5.0
"""How long a frame may take to follow a resize before its size is wrong (a frame that is
right ends the wait at once). 2 s was too short on two cores with a benchmark beside the CI's
five test processes: the fleet at 23x3 still showed the size before it."""


def sampled(sizes: Sequence[Step], edges: Iterable[Step], count: int) -> list[Step]:
    """The ``edges`` that are in ``sizes`` and ``count`` more of them picked with a fixed
    seed, in the order of ``sizes``."""
    chosen = set(edges) & set(sizes)
    rest = [size for size in sizes if size not in chosen]
    chosen.update(random.Random(SEED).sample(rest, min(count, len(rest))))
    return [size for size in sizes if size in chosen]


def sweep(sizes: Sequence[Step], edges: Iterable[Step], count: int, every: bool) -> list[Step]:
    """Every size, or the sampled ones."""
    return list(sizes) if every else sampled(sizes, edges, count)


def around(*values: int) -> list[int]:
    """Each value and its neighbours: where a layout changes its mind."""
    return sorted({v + d for v in values for d in (-1, 0, 1) if v + d > 0})


async def settle(pilot: Pilot[int]) -> None:
    """Process every pending message and draw the frame.

    What ``pilot.pause()`` does without its wait for 20 ms of idle CPU, which would make a
    walk of a thousand sizes take minutes.
    """
    await pilot._wait_for_screen()
    pilot.app.screen._on_timer_update()
    await pilot._wait_for_screen()


async def resize(pilot: Pilot[int], width: int, height: int) -> None:
    """Resize the terminal as a SIGWINCH does, and draw."""
    app = pilot.app
    size = Size(width, height)
    driver = app._driver
    assert driver is not None
    driver._size = size  # the headless driver's own size
    app.post_message(Resize(size, size))
    await settle(pilot)


def frame_lines(app: App[int]) -> list[str]:
    """What the terminal shows, line by line (the compositor's lines)."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


async def drawn(pilot: Pilot[int], width: int, height: int, what: str) -> list[str]:
    """The frame at ``width`` x ``height`` once the resize is laid out: it must fill the
    terminal exactly, every line as wide as the terminal."""
    # A screen on top of another may take a cycle more to lay out, and on a loaded machine
    # (CI's two cores under five test processes) the resize may come a few cycles later.
    deadline = time.monotonic() + LAYOUT_WAIT_S
    attempt = 0
    while True:
        if attempt < 2:
            await settle(pilot)
        else:
            await pilot.pause(0.01)
        attempt += 1
        strips = pilot.app.screen._compositor.render_strips()
        widths = {strip.cell_length for strip in strips}
        if (len(strips) == height and widths <= {width}) or time.monotonic() > deadline:
            break
    assert len(strips) == height and widths <= {width}, (
        f"{what}: at {width}x{height} drew {len(strips)} lines of widths {sorted(widths)}"
    )
    return [strip.text for strip in strips]
