"""The names ``--format`` takes, without the readers.

``gputop``'s option parser lists them; importing ``sources.formats`` for that would load
every reader (XML, CSV, text and dmon logs, gzip) into a live TUI that reads none of them.
``formats.FORMATS`` names its formats with these, in this order (a test holds them equal).
"""

from __future__ import annotations

XML = "xml"
CSV = "csv"
TEXT = "text"
DMON = "dmon"
GPUTOP_CSV = "gputop-csv"
"""gputop's own `--log` CSV."""

FORMAT_NAMES: tuple[str, ...] = (XML, CSV, TEXT, DMON, GPUTOP_CSV)
"""In the order ``formats.FORMATS`` tries them."""
