"""The ``gputop`` command: its start begun before the command line's modules are imported.

The command line's modules make dataclasses as they are imported, and those are served by
the code cache that ``startup.begin`` opens (``code_cache.py``), so that cache is begun
before anything else of gputop's is imported; this module imports only ``startup``.
"""

from __future__ import annotations

import sys

from gputop.cli import startup


def run() -> None:
    """Console-script entry point."""
    # The TUI ends the start after its first frame; a headless run as it begins.
    try:
        startup.begin()
        # Deferred: cli.main's modules make dataclasses, which the cache begun above serves.
        from gputop.cli.main import main

        code = main()
    finally:
        startup.end()
    sys.exit(code)
