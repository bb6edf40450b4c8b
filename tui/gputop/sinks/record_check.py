"""Whether `--record FILE` may append to what FILE already holds.

Appending is for continuing a recording of this machine: a new or empty file is started, and
a file that holds nvidia-smi documents is continued only when its first document names the
same GPUs (by UUID) as the machine being recorded, compressed or not as its name says. Anything
else (a text file, a capture of another machine, gzip data in a ``.xml``) is refused with one
line, as `--log` refuses a CSV with other columns: replay and `report` would read the mixture
as one machine.

A recorder killed mid-document leaves a partial last document; such a plain file stays
appendable, since replay drops (or, when a new document follows it, recovers past) the partial
one. So does a file holding only the start of one document (killed during its first write),
whose GPUs are checked as far as it names them. A ``.gz`` cut off inside a gzip member is
refused: nothing appended after a broken member can be read back. Only the first document is
compared, so apart from that gzip check the cost is the same for any length of recording.
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path

from gputop.errors import BadArguments, BadCapture
from gputop.model import Snapshot

_GZIP_MAGIC = b"\x1f\x8b"
_HEAD = 1 << 16
_ROOT_TAG = b"<nvidia_smi_log"
_UUID = re.compile(rb"<uuid>\s*(GPU-[0-9A-Fa-f-]+)\s*</uuid>")


def _uuids(snapshot: Snapshot) -> set[str]:
    return {gpu.uuid.upper() for gpu in snapshot.gpus if gpu.uuid}


_SHOWN = 3
"""UUIDs named at most on each side of a refusal; the rest are counted."""

_MIN_PREFIX = 12
"""Fewest characters of a UUID shown (``GPU-1a2b3c4d`` and its first digits)."""


def _prefix_length(uuids: set[str]) -> int:
    """Characters that tell every one of ``uuids`` apart (whole UUIDs when none shorter do):
    fake and anonymised GPUs share long prefixes, so a fixed cut can name eight GPUs alike."""
    longest = max((len(uuid) for uuid in uuids), default=0)
    for length in range(_MIN_PREFIX, longest):
        if len({uuid[:length] for uuid in uuids}) == len(uuids):
            return length
    return longest


def _short(uuids: set[str], others: set[str], length: int) -> str:
    """Up to ``_SHOWN`` of ``uuids``, those not in ``others`` first, each cut to
    ``length`` characters; the rest counted."""
    ordered = sorted(uuids, key=lambda uuid: (uuid in others, uuid))
    shown = [uuid if len(uuid) <= length else uuid[:length] + "…" for uuid in ordered[:_SHOWN]]
    more = len(ordered) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more else "") or "none"


def _other_gpus(where: str, recorded: set[str], here: set[str]) -> BadArguments:
    length = _prefix_length(recorded | here)
    return BadArguments(
        f"{where}: records other GPUs ({_short(recorded, here, length)}) than this machine's "
        f"({_short(here, recorded, length)}); record to another file"
    )


def _head(path: Path, compressed: bool) -> bytes:
    with path.open("rb") as handle:
        raw = handle.read(_HEAD)
    if not compressed:
        return raw
    # What decompresses of the first bytes; a cut-off member gives what it holds.
    try:
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(raw)
    except zlib.error:
        return b""


def _gzip_ends_whole(path: Path) -> bool:
    """Whether every gzip member of ``path`` is complete (the output is thrown away)."""
    member = zlib.decompressobj(16 + zlib.MAX_WBITS)
    started = False
    with path.open("rb") as handle:
        while chunk := handle.read(_HEAD):
            while chunk:
                started = True
                try:
                    member.decompress(chunk, 1 << 20)
                    # Output beyond the bound waits in unconsumed_tail; it is not needed.
                    while member.unconsumed_tail and not member.eof:
                        member.decompress(member.unconsumed_tail, 1 << 20)
                except zlib.error:
                    return False
                chunk = member.unused_data if member.eof else b""
                if member.eof:
                    member = zlib.decompressobj(16 + zlib.MAX_WBITS)
                    started = False
    return not started


def check_appendable(path: Path, machine: Snapshot | None, *, compress: bool) -> None:
    """Refuse to append to ``path`` unless it is empty, new, or a recording of ``machine``.

    Args:
        path: the ``--record`` file.
        machine: a snapshot of the machine to be recorded (None: only the format is checked).
        compress: whether the writer will append gzip members.

    Raises:
        BadArguments: ``path`` holds something else (one line saying what).
    """
    try:
        if not path.is_file() or path.stat().st_size == 0:
            return  # new, empty, or a pipe or device that is written, never read
        with path.open("rb") as handle:
            gzipped = handle.read(2) == _GZIP_MAGIC
    except OSError:
        return  # the writer's own open reports what is wrong with the path
    where = f"--record {path}"
    if gzipped != compress:
        held, named = (
            ("gzip data", "does not end in .gz") if gzipped else ("no gzip data", "ends in .gz")
        )
        raise BadArguments(f"{where}: holds {held} but its name {named}; record to another file")
    if gzipped and not _gzip_ends_whole(path):
        raise BadArguments(
            f"{where}: its last gzip member is cut off (a recorder killed mid-write), and what "
            "is appended after it could not be read back; record to another file"
        )
    head = _head(path, gzipped)
    if not head.strip(b" \t\r\n\xef\xbb\xbf"):
        return  # only white space
    # Deferred: the XML reader (57 ms, 47 modules), only for a --record file with content.
    from gputop.sources.smi.recording import Recording

    try:
        with Recording.open(path) as recording:
            first = recording.snapshot(0)
    except BadCapture as error:
        if _ROOT_TAG in head and head.lstrip(b" \t\r\n\xef\xbb\xbf").startswith(b"<"):
            # The start of one document, cut off: replay recovers past it. Its GPUs are
            # compared as far as it names them.
            partial = {m.decode("ascii").upper() for m in _UUID.findall(head)}
            if machine is not None and partial and not partial <= _uuids(machine):
                raise _other_gpus(where, partial, _uuids(machine)) from None
            return
        reason = str(error).removeprefix(f"{path}: ")
        raise BadArguments(
            f"{where}: not an nvidia-smi recording ({reason}); gputop appends only to "
            "recordings of this machine"
        ) from None
    if machine is None:
        return
    recorded, here = _uuids(first), _uuids(machine)
    if not recorded:
        raise BadArguments(
            f"{where}: its recording names no GPU UUID, so it cannot be told to be this "
            "machine's; record to another file"
        )
    if recorded != here:
        raise _other_gpus(where, recorded, here)
