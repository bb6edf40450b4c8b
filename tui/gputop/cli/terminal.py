"""Whether the TUI has a terminal to run in, and what to do when it has none.

The TUI draws on the terminal and reads keys from it. Started with its output going to a
file or a pipe (``gputop > f``, ``gputop | cat``, cron) it would write escape codes there and
wait for a ``q`` that never comes; so then gputop prints what ``--once`` prints and exits,
as ``top -b`` does. With ``--record`` or ``--log`` that would quietly record one snapshot
instead of a session, so it is refused with one line instead.

Keys come from stdin when it is a terminal and from ``/dev/tty`` when it is not (a pipe, a
file, /dev/null), as ``less`` does: only with neither is the TUI refused.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable
from typing import TextIO

from gputop.cli.options import Options
from gputop.errors import BadArguments


def _isatty(stream: TextIO | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (ValueError, OSError):  # closed, or no descriptor at all
        return False


def controlling_terminal() -> bool:
    """True when ``/dev/tty`` (the process's terminal) can be opened for keys."""
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY)
    except OSError:
        return False
    os.close(fd)
    return True


def tui_or_batch(
    options: Options,
    *,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    has_terminal: Callable[[], bool] = controlling_terminal,
) -> Options:
    """``options`` to run: unchanged when the TUI can run, ``--once`` when stdout is no
    terminal.

    Raises:
        BadArguments: no terminal for the TUI and no single summary would do (``--record``,
            ``--log``), or no terminal to read keys from.
    """
    if options.headless:
        return options
    if not _isatty(sys.stdout if stdout is None else stdout):
        given = (("--record", options.record), ("--log", options.log))
        asked = [name for name, path in given if path is not None]
        if asked:
            raise BadArguments(
                f"stdout is not a terminal, so there is no TUI to run {' and '.join(asked)} "
                "beside: add --count N to record N snapshots without it"
            )
        return dataclasses.replace(options, once=True)
    if not _isatty(sys.stdin if stdin is None else stdin) and not has_terminal():
        raise BadArguments(
            "stdin is not a terminal and there is no /dev/tty to read keys from: "
            "use --once, --json or --count N"
        )
    return options
