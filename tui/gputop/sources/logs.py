"""Which reader opens a file: `nvidia-smi -q` text, dmon/pmon logs, or XML.

Told by content, not by name: the first bytes of a regular file are offered to each text
reader's ``looks_like``; a file none of them claims (and a pipe, which cannot be looked at
twice) goes to the XML ``Recording``, whose errors say what it expected.
"""

from __future__ import annotations

import os
import stat
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from gputop.errors import BadCapture
from gputop.sources import dmon
from gputop.sources.linelog import LineLog
from gputop.sources.smi import text
from gputop.sources.smi.recording import Recording

AnyRecording = Recording | LineLog
"""What `--replay` and `report` read: an XML recording or a text log."""

_HEAD_BYTES = 65536
_READ_BYTES = 1 << 16

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


_SNIFF_BYTES = 4096


def _relay(source: int, sink: int, done: threading.Event | None) -> None:
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
        if done is not None:
            done.set()


def _head(source: int) -> bytes:
    """The pipe's first bytes: up to the end of its first line that is not blank."""
    head = b""
    while len(head) < _SNIFF_BYTES:
        chunk = os.read(source, _SNIFF_BYTES - len(head))
        if not chunk:
            break
        head += chunk
        stripped = head.lstrip(b" \t\r\n\xef\xbb\xbf")
        if b"\n" in stripped or stripped.startswith(b"<"):
            break
    return head


def open_stream(
    path: Path, name: str, open_xml: Callable[[Path], Recording], *, follow: bool = False
) -> AnyRecording:
    """A pipe (`--replay -`, a FIFO), read as what its first line says it is.

    A pipe cannot be read twice: its first bytes are read here, and then the whole pipe is
    relayed on a thread, to an unnamed temporary file a text log is read from as it grows
    (`nvidia-smi dmon -o DT | gputop --replay -`), or to a new pipe for the XML reader.
    Not followed (`report`), a text log is read once the writer has closed the pipe.

    Raises:
        BadCapture: the stream cannot be read as what it looks like.
    """
    try:
        source = os.open(path, os.O_RDONLY)
        head = _head(source)
    except OSError as error:
        raise BadCapture(f"{name}: {(error.strerror or str(error)).lower()}") from None
    opener = next((reader for _, looks, reader in TEXT_READERS if looks(head)), None)
    if opener is None:
        read, write = os.pipe()
        threading.Thread(target=_relay_with_head, args=(head, source, write), daemon=True).start()
        return open_xml(Path(f"/dev/fd/{read}"))
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
        threading.Thread(target=_relay, args=(source, spool, ended), daemon=True).start()
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


def _relay_with_head(head: bytes, source: int, sink: int) -> None:
    try:
        view = memoryview(head)
        while view:
            view = view[os.write(sink, view) :]
    except OSError:
        os.close(source)
        os.close(sink)
        return
    _relay(source, sink, None)
