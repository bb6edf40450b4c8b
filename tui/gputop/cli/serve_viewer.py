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

from gputop.errors import GputopError


def main(argv: Sequence[str] | None = None) -> int:
    """Run one viewer; returns its exit status."""
    parser = argparse.ArgumentParser(prog="gputop-serve-viewer")
    parser.add_argument("--socket", type=Path)
    parser.add_argument("--hide-commands", action="store_true")
    parser.add_argument("rest", nargs=argparse.REMAINDER)
    ns = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    rest = [arg for arg in ns.rest if arg != "--"] if ns.rest[:1] == ["--"] else ns.rest
    try:
        from gputop.cli.main import parse_options
        from gputop.cli.tui import run_tui

        options = dataclasses.replace(
            parse_options(rest), served=True, readonly=True, hide_commands=ns.hide_commands
        )
        if ns.socket is None:
            return run_tui(options)
        from gputop.pipeline.shared_feed import SharedFeed
        from gputop.sources.shared import SnapshotSubscriber

        subscriber = SnapshotSubscriber(ns.socket)
        options = dataclasses.replace(options, interval=subscriber.interval)
        feed = SharedFeed(subscriber)
        try:
            return run_tui(options, source=feed)
        finally:
            feed.close()
    except GputopError as error:
        print(f"gputop: {error}", file=sys.stderr)
        return error.exit_code


if __name__ == "__main__":
    sys.exit(main())
