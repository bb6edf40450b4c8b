"""`python -m gputop`."""

from gputop.cli import run

run()
