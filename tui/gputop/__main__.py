"""`python -m gputop`."""

from gputop.cli.entry import run

run()
