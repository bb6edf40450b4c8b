"""gputop's start begun and ended as the `gputop` command does it (``cli/entry.py``), for the
benchmarks that start gputop in a harness of their own (``bench_tui``, ``bench_startup``).

Imported before anything of gputop's is, so this module imports nothing at its top; a
checkout from before the code cache (``--code``) only holds and releases collection.
"""

from __future__ import annotations


def begin_gputop_start() -> None:
    """Collection held, dataclasses' code served from its cache (``cli/startup.py``)."""
    from gputop.cli import startup

    getattr(startup, "begin", startup.hold_collection)()


def end_gputop_start() -> None:
    """As gputop after its first frame: the code cache written, collection released."""
    from gputop.cli import startup

    getattr(startup, "end", startup.release_collection)()
