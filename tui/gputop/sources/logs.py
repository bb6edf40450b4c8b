"""Text logs (`nvidia-smi -q` text, dmon/pmon) arriving on a pipe.

A text log is read from a seekable file as it grows; a pipe is neither, so its bytes are
copied as they arrive into an unnamed temporary file that the log reads from
(`nvidia-smi dmon -o DT | gputop --replay -`). ``formats`` decides that a pipe holds a text
log and hands it here with the first bytes it read to tell.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from gputop.errors import BadCapture
from gputop.sources.linelog import LineLog

_READ_BYTES = 1 << 16

SpooledOpener = Callable[..., LineLog]
"""``opener(path, follow=True, ended=event)``: a text log read from a growing copy."""


def _copy(source: int, sink: int, ended: threading.Event) -> None:
    """Copy the pipe ``source`` into ``sink`` until its writer closes it."""
    try:
        while chunk := os.read(source, _READ_BYTES):
            view = memoryview(chunk)
            while view:
                view = view[os.write(sink, view) :]
    except OSError:
        pass  # the reader went away (gputop is exiting) or the pipe broke: nothing to tell
    finally:
        os.close(source)
        os.close(sink)
        ended.set()


def spool_stream(
    source: int, head: bytes, name: str, opener: SpooledOpener, *, follow: bool
) -> LineLog:
    """The text log on the pipe ``source``, whose first bytes ``head`` were read already.

    Not followed (`report`), the log is read once the writer has closed the pipe.

    Raises:
        BadCapture: no room for the copy, or the stream cannot be read as that log.
    """
    try:
        spool, spool_path = tempfile.mkstemp(prefix="gputop-", suffix=".log")
    except OSError as error:
        os.close(source)
        raise BadCapture(
            f"{name}: no room for the stream in {tempfile.gettempdir()} "
            f"({(error.strerror or str(error)).lower()}); point TMPDIR elsewhere"
        ) from None
    ended = threading.Event()
    try:
        os.write(spool, head)
        threading.Thread(
            target=_copy, args=(source, spool, ended), name="gputop-spool", daemon=True
        ).start()
        try:
            log = opener(Path(spool_path), follow=True, ended=ended)
        except BadCapture as error:
            raise BadCapture(str(error).replace(spool_path, name)) from None
    except OSError as error:  # the first write to the copy failed (a full disk)
        raise BadCapture(
            f"{name}: cannot keep the stream in {tempfile.gettempdir()} "
            f"({(error.strerror or str(error)).lower()}); point TMPDIR elsewhere"
        ) from None
    finally:
        os.unlink(spool_path)  # the log holds it open; nothing is left behind
    if not follow:
        ended.wait()
        len(log)  # reads to the end, which ends following
    log.path = Path(name)
    log.warnings[:] = [warning.replace(spool_path, name) for warning in log.warnings]
    return log
