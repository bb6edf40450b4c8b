"""One browser viewer of `gputop serve`: the app textual-serve starts per connection.

``python -m gputop.cli.serve_viewer [--socket PATH] [--hide-commands] -- [gputop options]``.
With ``--socket`` it follows the server's one sampler (a live view that polls nothing);
without, it replays ``--replay FILE`` itself. Either way read-only, whatever the options.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path

from gputop.cli.options import Options
from gputop.cli.tui import run_tui
from gputop.errors import GputopError
from gputop.model.safe_text import terminal_safe
from gputop.pipeline.shared_feed import SharedFeed
from gputop.sources.serve_socket import SnapshotSubscriber


def main(argv: Sequence[str] | None = None) -> int:
    """Run one viewer; returns its exit status."""
    parser = argparse.ArgumentParser(prog="gputop-serve-viewer")
    parser.add_argument("--socket", type=Path)
    parser.add_argument("--hide-commands", action="store_true")
    parser.add_argument("rest", nargs=argparse.REMAINDER)
    ns = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    rest = [arg for arg in ns.rest if arg != "--"] if ns.rest[:1] == ["--"] else ns.rest
    try:
        if ns.socket is None:
            # Deferred: gputop's option parser (7 ms, 15 modules), only for a replaying viewer.
            from gputop.cli.main import parse_options

            options = dataclasses.replace(
                parse_options(rest), served=True, readonly=True, hide_commands=ns.hide_commands
            )
            return run_tui(options)
        subscriber = SnapshotSubscriber(ns.socket)
        options = _live_options(rest, subscriber.interval, ns.hide_commands)
        feed = SharedFeed(subscriber)
        try:
            return run_tui(options, source=feed)
        finally:
            feed.close()
    except GputopError as error:
        print(f"gputop: {terminal_safe(str(error))}", file=sys.stderr)
        return error.exit_code


def _live_options(args: Sequence[str], interval: float, hide: bool) -> Options:
    """A live viewer's options: of what the server checked with gputop's own parser, only
    ``--gpu`` and ``--theme`` concern it (the interval is the server's). Not importing that
    parser spares every new viewer the import of every recording format before its first
    frame."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--gpu")
    parser.add_argument("--theme")
    known, _ = parser.parse_known_args(list(args))
    return Options(
        gpu=known.gpu,
        theme=known.theme,
        interval=interval,
        served=True,
        readonly=True,
        hide_commands=hide,
    )


if __name__ == "__main__":
    sys.exit(main())
