"""Which reader opens a file: `nvidia-smi -q` text, dmon/pmon logs, or XML.

Told by content, not by name: the first bytes of a regular file are offered to each text
reader's ``looks_like``; a file none of them claims (and a pipe, which cannot be looked at
twice) goes to the XML ``Recording``, whose errors say what it expected.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from gputop.sources import dmon
from gputop.sources.linelog import LineLog
from gputop.sources.smi import text
from gputop.sources.smi.recording import Recording

AnyRecording = Recording | LineLog
"""What `--replay` and `report` read: an XML recording or a text log."""

_HEAD_BYTES = 65536

Opener = Callable[..., LineLog]
"""``opener(path, follow=False)``."""

TEXT_READERS: tuple[tuple[str, Callable[[bytes], bool], Opener], ...] = (
    ("nvidia-smi -q text", text.looks_like, text.open_text),
    ("nvidia-smi dmon/pmon log", dmon.looks_like, dmon.open_monitor_log),
)
"""(name, sniffer, opener) of each text format, tried in order."""


def text_reader(path: Path) -> Opener | None:
    """The opener of the text format ``path`` holds, or None (XML, or not looked at)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with path.open("rb") as handle:
            head = handle.read(_HEAD_BYTES)
    except OSError:
        return None  # the XML reader says what is wrong with it
    for _, looks_like, opener in TEXT_READERS:
        if looks_like(head):
            return opener
    return None


def open_any(
    path: Path, open_xml: Callable[[], Recording], *, follow: bool = False
) -> AnyRecording:
    """The text log at ``path`` when it is one (``follow``: still being written), else
    ``open_xml()``.

    Raises:
        BadCapture: the file cannot be read as what it looks like.
    """
    opener = text_reader(path)
    return opener(path, follow=follow) if opener is not None else open_xml()
