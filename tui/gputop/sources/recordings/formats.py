"""The recording formats gputop reads, and which one a file is, told by its content.

``FORMATS`` lists them; each says whether a file's first bytes look like it
(``looks_like(head) -> bool``) and opens it as a recording (a ``Timeline`` that replay,
``--once``/``--json`` and ``report`` read alike). ``open_recording`` picks the format by
content, never by file name, unless one is named (``--format``). A file in none of them is
refused with one line naming what gputop reads.

A pipe cannot be read twice: its first bytes are read here, then handed on, followed by
the rest, through a pipe of gputop's own that the chosen reader opens instead.
"""

from __future__ import annotations

import os
import stat
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Protocol

from gputop.errors import BadCapture
from gputop.model import Snapshot
from gputop.sources import csvlog
from gputop.sources.csvlog.apps import AppsLog, WithApps, sampling_interval
from gputop.sources.recordings import dmon, gputop_log
from gputop.sources.recordings import format_names as names
from gputop.sources.recordings.following import WAIT_SLICE, FirstWait
from gputop.sources.recordings.logs import SpooledOpener, spool_gzip, spool_stream
from gputop.sources.recordings.spool import write_all
from gputop.sources.smi import text
from gputop.sources.smi.recording import Recording as XmlRecording

_HEAD = 4096
"""Bytes read to tell the format (a CSV header of every query field is about 6 KB: a line
cut here is still a header of known fields)."""
_GZIP_MAGIC = b"\x1f\x8b"
_BLANK = b" \t\r\n\xef\xbb\xbf"


class AnyRecording(Protocol):
    """What every format's recording offers (``smi.recording.Recording`` is the model)."""

    path: Path
    warnings: list[str]

    @property
    def following(self) -> bool: ...

    def wait_for(self, index: int, timeout: float | None = None) -> bool: ...

    def __len__(self) -> int: ...

    def snapshot(self, index: int) -> Snapshot: ...

    def timestamp(self, index: int) -> datetime | None: ...

    def index_at(self, moment: datetime) -> int: ...

    def __iter__(self) -> Iterator[Snapshot]: ...

    def close(self) -> None: ...

    def __enter__(self) -> AnyRecording: ...

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None: ...


Opener = Callable[..., AnyRecording]
"""``open(path, *, follow=False, waiting=None)``."""


@dataclass(frozen=True, slots=True)
class Format:
    """One format gputop reads."""

    name: str
    """What ``--format`` calls it."""
    description: str
    """How the user makes it, for the list of what gputop reads."""
    looks_like: Callable[[bytes], bool]
    open: Opener
    spooled: SpooledOpener | None = None
    """A text log, read from a file: a pipe is copied to one as it arrives (``logs``)."""


def _text_log(opener: SpooledOpener) -> Opener:
    """``opener`` as an ``Opener`` (a text log tells no waiting: it reads what has come)."""

    def open_log(
        path: Path | str, *, follow: bool = False, waiting: Callable[[], None] | None = None
    ) -> AnyRecording:
        log: AnyRecording = opener(path, follow=follow)
        return log

    return open_log


def _xml_looks_like(head: bytes) -> bool:
    return head.lstrip(_BLANK).startswith(b"<")


FORMATS: list[Format] = [
    Format(
        names.XML,
        "`nvidia-smi -q -x [-l N]` XML (a document, a stream, .gz, or a directory of them)",
        _xml_looks_like,
        XmlRecording.open,
    ),
    Format(
        names.CSV,
        "`nvidia-smi --query-gpu=... --format=csv [-l N]` logs (with their header line, or "
        "its fields named by --query-gpu)",
        csvlog.looks_like,
        csvlog.CsvRecording.open,
    ),
    Format(
        names.TEXT,
        "`nvidia-smi -q [-l N]` text",
        text.looks_like,
        _text_log(text.open_text),
        text.open_text,
    ),
    Format(
        names.DMON,
        "`nvidia-smi dmon [-o DT]` and `nvidia-smi pmon [-o DT]` logs",
        dmon.looks_like,
        _text_log(dmon.open_monitor_log),
        dmon.open_monitor_log,
    ),
    Format(
        names.GPUTOP_CSV,
        "gputop's own `--log` CSV",
        gputop_log.looks_like,
        _text_log(gputop_log.open_gputop_log),
        gputop_log.open_gputop_log,
    ),
]
"""Tried in order on a file's first bytes; the first that says yes reads it."""


def format_names() -> list[str]:
    """The names ``--format`` takes."""
    return [known.name for known in FORMATS]


def by_name(name: str) -> Format:
    """The format called ``name``.

    Raises:
        BadCapture: no format is called that.
    """
    for known in FORMATS:
        if known.name == name:
            return known
    raise BadCapture(f"--format {name}: not a format gputop reads ({', '.join(format_names())})")


def readable_formats() -> str:
    """The one-line list of what gputop reads."""
    return "; ".join(known.description for known in FORMATS)


def _inflated(head: bytes) -> bytes:
    """The start of a gzip's content (empty when it is no readable gzip)."""
    try:
        return zlib.decompressobj(31).decompress(head, _HEAD)
    except zlib.error:
        return b""


def detect(head: bytes) -> Format | None:
    """The format whose content ``head`` starts (a gzip is looked into); None if none."""
    if head.startswith(_GZIP_MAGIC):
        head = _inflated(head)
    for known in FORMATS:
        if known.looks_like(head):
            return known
    return None


def _enough(head: bytes) -> bool:
    """``head`` holds enough to tell the format: a whole first line, or ``_HEAD`` bytes."""
    if len(head) >= _HEAD:
        return True
    text = head.lstrip(_BLANK)
    # A gzip's first bytes may not inflate to a whole line: it is read to _HEAD or its end.
    return not head.startswith(_GZIP_MAGIC) and (b"\n" in text or text.startswith(b"<"))


def _starts_gzip(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(2) == _GZIP_MAGIC
    except OSError:
        return False  # the reader says what is wrong with it


def is_pipe(path: Path) -> bool:
    """A FIFO, socket or character device: read once, as it comes, never sought in."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


class _Relay:
    """A pipe's first bytes, then the rest of it, through a new pipe a reader can open."""

    def __init__(self, source: int, head: bytes) -> None:
        self._source = source
        read_end, self._write_end = os.pipe()
        self.read_end = read_end
        self.path = Path(f"/dev/fd/{read_end}")
        threading.Thread(target=self._copy, args=(head,), name="gputop-relay", daemon=True).start()

    def _copy(self, head: bytes) -> None:
        try:
            data = head
            while data:
                write_all(self._write_end, data)
                data = os.read(self._source, 1 << 16)
        except OSError:
            pass  # the reader went away (gputop is closing): nothing to hand on
        finally:
            os.close(self._write_end)
            os.close(self._source)


def _head_of_pipe(path: Path, waiting: Callable[[], None] | None) -> tuple[bytes, int]:
    """Open a pipe and read until its format can be told (or it ends)."""
    fd = os.open(path, os.O_RDONLY)
    head = b""
    first_wait = FirstWait(waiting)
    os.set_blocking(fd, False)
    try:
        while not _enough(head):
            try:
                chunk = os.read(fd, _HEAD)
            except BlockingIOError:
                first_wait.tick()
                time.sleep(0.02)
                continue
            if not chunk:
                break
            head += chunk
    finally:
        os.set_blocking(fd, True)
    return head, fd


def _head_of_file(path: Path, follow: bool, waiting: Callable[[], None] | None) -> bytes:
    """A file's first bytes; followed, waited for until the format can be told."""
    first_wait = FirstWait(waiting)
    while True:
        try:
            with path.open("rb") as handle:
                head = handle.read(_HEAD)
        except OSError:
            return b""  # the reader says what is wrong with it
        if not follow or _enough(head):
            return head
        first_wait.tick()
        time.sleep(WAIT_SLICE)


def open_recording(
    path: Path | str,
    *,
    follow: bool = False,
    format_name: str | None = None,
    waiting: Callable[[], None] | None = None,
    query_gpu: str | None = None,
    apps: Path | None = None,
) -> AnyRecording:
    """Open a recording (see ``_open``); ``apps``: a `--query-compute-apps` CSV log kept
    beside a `--query-gpu` one, whose processes its snapshots take (``csvlog.apps``).

    Raises:
        BadCapture: unreadable, or in no format gputop reads (the line lists them).
    """
    recording = _open(
        path, follow=follow, format_name=format_name, waiting=waiting, query_gpu=query_gpu
    )
    if apps is None:
        return recording
    try:
        if not isinstance(recording, csvlog.CsvRecording):
            raise BadCapture(
                f"--apps {apps}: the processes of a `--query-gpu` CSV log; {path} is not one"
            )
        log = AppsLog.read(Path(apps))
        return WithApps(recording, log, sampling_interval(recording.seconds()))
    except BadCapture:
        recording.close()
        raise


def _open(
    path: Path | str,
    *,
    follow: bool = False,
    format_name: str | None = None,
    waiting: Callable[[], None] | None = None,
    query_gpu: str | None = None,
) -> AnyRecording:
    """Open a recording in whichever format it is (or ``format_name``'s). ``query_gpu``:
    the fields of a `--query-gpu` CSV log written with ``noheader``, as given to
    nvidia-smi (the log is then read as CSV).

    Raises:
        BadCapture: unreadable, or in no format gputop reads (the line lists them).
    """
    path = Path(path)
    chosen = None if format_name is None else by_name(format_name)
    if query_gpu is not None:
        if chosen is not None and chosen.name != "csv":
            raise BadCapture(f"--query-gpu names the columns of a CSV log, not of {chosen.name}")
        chosen = _with_query(query_gpu)
    if path.is_dir():
        return (chosen or FORMATS[0]).open(path, follow=follow, waiting=waiting)
    if chosen is not None and not is_pipe(path):
        if chosen.spooled is not None and _starts_gzip(path):
            return spool_gzip(path, chosen.spooled, follow=follow)
        return chosen.open(path, follow=follow, waiting=waiting)
    if is_pipe(path):
        try:
            head, fd = _head_of_pipe(path, waiting)
        except OSError as error:
            raise BadCapture(f"{path}: {(error.strerror or str(error)).lower()}") from None
        try:
            found = chosen or _identify(path, head)
        except BadCapture:
            os.close(fd)
            raise
        if found.spooled is not None:
            return spool_stream(fd, head, str(path), found.spooled, follow=follow)
        relay = _Relay(fd, head)
        try:
            recording = found.open(relay.path, follow=True, waiting=waiting)
        except BadCapture as error:
            raise BadCapture(str(error).replace(str(relay.path), str(path))) from None
        finally:
            os.close(relay.read_end)  # the reader has its own descriptor by now
        recording.path = path  # warnings name what the user gave, not the relay
        return recording
    head = _head_of_file(path, follow, waiting)
    found = _identify(path, head)
    if found.spooled is not None and head.startswith(_GZIP_MAGIC):
        # A text log is read from a plain file it can seek in: inflated into one first.
        return spool_gzip(path, found.spooled, follow=follow)
    return found.open(path, follow=follow, waiting=waiting)


def _with_query(query_gpu: str) -> Format:
    """The CSV format, its columns named by ``query_gpu`` (checked here, before any read)."""
    csvlog.query_schema(query_gpu)
    csv = by_name("csv")

    def open_csv(
        path: Path | str, *, follow: bool = False, waiting: Callable[[], None] | None = None
    ) -> AnyRecording:
        return csvlog.CsvRecording.open(path, follow=follow, waiting=waiting, query=query_gpu)

    return Format(csv.name, csv.description, csv.looks_like, open_csv)


def _identify(path: Path, head: bytes) -> Format:
    if not head.strip(_BLANK) or (head.startswith(_GZIP_MAGIC) and not _inflated(head)):
        return FORMATS[0]  # its reader says why: empty, only white space, a bad gzip
    found = detect(head)
    if found is None and csvlog.looks_like_noheader(
        _inflated(head) if head.startswith(_GZIP_MAGIC) else head
    ):
        raise BadCapture(
            f"{path}: a `--query-gpu` CSV log without its header line; {csvlog.NOHEADER_HINT}"
        )
    if found is None:
        raise BadCapture(f"{path}: not a recording gputop reads; it reads {readable_formats()}")
    return found
