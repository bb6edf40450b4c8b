"""`python -m gputop`."""

from gputop.cli.main import run

run()
