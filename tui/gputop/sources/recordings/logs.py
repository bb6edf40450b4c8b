"""Text logs (`nvidia-smi -q` text, dmon/pmon) arriving on a pipe.

A text log is read from a seekable file as it grows; a pipe is neither, so its bytes are
copied as they arrive into an unnamed temporary file that the log reads from
(`nvidia-smi dmon -o DT | gputop --replay -`). ``formats`` decides that a pipe holds a text
log and hands it here with the first bytes it read to tell.
"""

from __future__ import annotations

import gzip
import os
import tempfile
import threading
import zlib
from collections.abc import Callable
from pathlib import Path

from gputop.errors import BadCapture
from gputop.sources.recordings.linelog import LineLog
from gputop.sources.recordings.spool import write_all

_READ_BYTES = 1 << 16

SpooledOpener = Callable[..., LineLog]
"""``opener(path, follow=True, ended=event)``: a text log read from a growing copy."""


def _copy(
    read: Callable[[], bytes],
    done: Callable[[], None],
    sink: int,
    ended: threading.Event,
    problems: list[str] | None = None,
) -> None:
    """Copy what ``read`` gives into ``sink`` until it gives nothing; a read that fails
    ends the copy, said in ``problems`` when given."""
    try:
        while chunk := read():
            write_all(sink, chunk)
    except (OSError, EOFError, zlib.error) as error:
        # The reader went away (gputop is exiting), the pipe broke, or a gzip is cut off.
        if problems is not None:
            problems.append(f"the data stopped early ({error or 'cut off'})")
    finally:
        done()
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
    return _spooled(
        lambda: os.read(source, _READ_BYTES),
        lambda: os.close(source),
        head,
        name,
        opener,
        follow=follow,
        keeping="keep the stream",
        problems=None,
    )


def spool_gzip(path: Path, opener: SpooledOpener, *, follow: bool) -> LineLog:
    """The text log gzipped in the file ``path`` (`nvidia-smi -q -l 5 | gzip > run.txt.gz`),
    inflated into an unnamed temporary file as it is read.

    Raises:
        BadCapture: unreadable, no room for the copy, or not that log once inflated.
    """
    try:
        handle = gzip.open(path, "rb")  # noqa: SIM115 - closed by the copying thread
    except OSError as error:
        raise BadCapture(f"{path}: not a readable gzip ({error})") from None
    try:
        head = handle.read1(_READ_BYTES)
    except (OSError, EOFError, zlib.error) as error:
        handle.close()
        raise BadCapture(f"{path}: not a readable gzip ({error})") from None
    problems: list[str] = []
    log = _spooled(
        lambda: handle.read1(_READ_BYTES),
        handle.close,
        head,
        str(path),
        opener,
        follow=follow,
        keeping="inflate it",
        problems=problems,
    )
    log.warnings.extend(f"{path}: {problem}" for problem in problems)
    return log


def _spooled(
    read: Callable[[], bytes],
    close: Callable[[], None],
    head: bytes,
    name: str,
    opener: SpooledOpener,
    *,
    follow: bool,
    keeping: str,
    problems: list[str] | None,
) -> LineLog:
    """The log ``opener`` reads from a temporary copy of ``head`` and then of what ``read``
    gives, copied by a thread that calls ``close`` at the end; errors and warnings name
    ``name``, not the copy. ``keeping`` says what the copy is for, in the line a full disk
    gets."""
    try:
        spool, spool_path = tempfile.mkstemp(prefix="gputop-", suffix=".log")
    except OSError as error:
        close()
        raise BadCapture(_copy_failed(name, f"no room to {keeping}", error)) from None
    try:
        try:
            write_all(spool, head)
        except OSError as error:  # a full disk, or a file size limit
            os.close(spool)
            close()
            raise BadCapture(_copy_failed(name, f"cannot {keeping}", error)) from None
        ended = threading.Event()
        threading.Thread(
            target=_copy,
            args=(read, close, spool, ended, problems),
            name="gputop-spool",
            daemon=True,
        ).start()
        try:
            log = opener(Path(spool_path), follow=True, ended=ended)
        except BadCapture as error:
            raise BadCapture(str(error).replace(spool_path, name)) from None
    finally:
        os.unlink(spool_path)  # the log holds it open; nothing is left behind
    if not follow:
        ended.wait()
        len(log)  # reads to the end, which ends following
    log.path = Path(name)
    log.warnings[:] = [warning.replace(spool_path, name) for warning in log.warnings]
    return log


def _copy_failed(name: str, failed: str, error: OSError) -> str:
    """The line for a copy that could not be made or written (``failed`` says which)."""
    return (
        f"{name}: {failed} in {tempfile.gettempdir()} "
        f"({(error.strerror or str(error)).lower()}); point TMPDIR elsewhere"
    )
