"""What the garbage collector alone would free: objects left in reference cycles.

gputop runs with a young generation of 20,000 (``cli/startup``), so a cycle made on every
tick waits, with everything it holds, for thousands of allocations before it is freed: the
process's memory rises by that much and stays there.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


class CyclicGarbage:
    """The objects found in reference cycles once the ``with`` block is over."""

    def __init__(self) -> None:
        self.objects: list[object] = []

    def of_type(self, kind: type) -> list[object]:
        """Those of them that are ``kind``."""
        return [item for item in self.objects if type(item) is kind]


@contextmanager
def cyclic_garbage() -> Iterator[CyclicGarbage]:
    """Collect before the block, hold the collector during it, then collect what the block
    left in cycles into the object yielded (instead of freeing it)."""
    found = CyclicGarbage()
    gc.collect()
    was_enabled, flags, kept = gc.isenabled(), gc.get_debug(), len(gc.garbage)
    gc.disable()
    try:
        yield found
    finally:
        gc.set_debug(flags | gc.DEBUG_SAVEALL)
        try:
            gc.collect()
            found.objects = gc.garbage[kept:]
        finally:
            del gc.garbage[kept:]
            gc.set_debug(flags)
            if was_enabled:
                gc.enable()
