"""Dataclasses' generated methods compiled once, and read back by later starts.

A dataclass is given its methods (``__init__``, ``__repr__``, ``__eq__``; a frozen one also
``__hash__``, ``__setattr__`` and ``__delattr__``) as source text that ``dataclasses``
compiles with ``exec`` when the class is made (an ``exec`` a method up to Python 3.12, one a
class from 3.13). Compiling is most of a class's making, and gputop's live TUI makes about a
hundred classes before its first frame (its own, Textual's, Rich's), the same ones every
start (what that costs: benchmarks/README.md, "Dataclasses' methods compiled once").

So while gputop starts (``begin`` to ``end``, the window in which collection is held,
``startup.py``), the ``exec`` that ``dataclasses`` calls is one that looks the source text up
among the code a start before compiled and kept, and compiles what is not there. The code
is the very code object ``exec`` would have compiled from that text (the same text, no
inherited flags, the same optimisation level), so the classes are the same. At the end the
code compiled anew is written for the next start.

A text is found by its 16-byte BLAKE2 digest, and its code kept as marshalled bytes in one
block, the file's tail (the whole checked against a digest, so that a damaged file is
compiled past rather than run). The file is read into a mapping of memory of its own, not
into Python's or the C library's: the texts and code objects themselves, as a file read with
``marshal.load`` gives them, would leave their small pieces scattered through Python's memory
for the life of the process, and a block the size of the file taken from malloc, once freed,
would leave glibc keeping blocks that size in its heap from then on (it raises its threshold
for handing big blocks back to the system to the largest one freed). The mapping is handed
back whole when the start ends. It is a copy, not the file mapped: a file cut or rewritten in
place during the start can neither crash it (SIGBUS) nor change what its digest checked.

The file lies beside gputop's own bytecode (``__pycache__``, or under ``sys.pycache_prefix``)
and is trusted more strictly than Python trusts that bytecode: it is read only when owned by
this user (or root) and writable by no one else, and written (readable by all, writable by
its owner, never through a link) only where Python would write bytecode. Anything wrong with
it (missing, unreadable, of another Python, damaged, a full disk) means compiling as
``dataclasses`` would have. ``GPUTOP_STOCK_TEXTUAL`` (``1``, or a list naming
``dataclass_code``) turns it off with gputop's patches of Textual.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import marshal
import mmap
import os
import stat
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from types import CodeType
from typing import Any

from gputop.patches import stock_names

blake2b: Callable[..., Any] | None
try:
    # hashlib's blake2b, without hashlib: importing hashlib loads OpenSSL (``cli/no_tls.py``).
    from _blake2 import blake2b
except ImportError:  # a Python built without it: no cache
    blake2b = None

NAME = "dataclass_code"
"""What ``GPUTOP_STOCK_TEXTUAL`` calls this cache."""
MAX_ENTRIES = 4096
"""Texts the file keeps. Past this (old releases' classes pile up), a start writes only what it
used itself."""

FORMAT = b"gputop dataclass code 2\n" + importlib.util.MAGIC_NUMBER + bytes([sys.flags.optimize])
"""How a file starts: this layout, and what its code was compiled by (the bytecode's magic
number and ``-O``). Then the digest of everything after it, the length of the marshalled
index, the index and the block."""
DIGEST = 16
"""Bytes of a digest."""
CHECKED = len(FORMAT) + DIGEST
"""Where what the digest covers begins."""
HEADER = CHECKED + 8
"""Bytes before the index: the format, the digest, the index's length."""

Index = dict[bytes, tuple[int, int]]
"""A text's digest -> where its marshalled code lies in the block: (start, end)."""
Block = bytes | memoryview
"""The marshalled code of every text, end to end: the tail of the file as read into its
mapping, or empty."""


def digest(data: str | bytes | memoryview) -> bytes:
    """The key of a text, or the check of a file's contents."""
    assert blake2b is not None  # enabled() says so before anything is looked up
    raw = data.encode() if isinstance(data, str) else data
    key: bytes = blake2b(raw, digest_size=DIGEST).digest()
    return key


class _Window:
    """One start's cache: the code read, what this start used and compiled."""

    def __init__(self, path: Path | None, index: Index, block: Block) -> None:
        self.path = path
        self.index = index
        self.block = block
        self.fresh: dict[bytes, bytes] = {}
        """Code compiled this start, marshalled (a code object kept would be the scattered
        memory the block avoids)."""
        self.used: set[bytes] = set()
        self.hits = 0

    def serve(self, source: Any, names: Any = None, local_names: Any = None, /) -> None:
        """``exec`` for ``dataclasses``: a text's code from the cache, or compiled into it."""
        if not isinstance(source, str):
            exec(source, names, local_names)
            return
        key = digest(source)
        self.used.add(key)
        code = self._kept(key)
        if code is None:
            # What exec(source) compiles: nothing inherited from this module (whose
            # `from __future__ import annotations` would turn the methods' annotations to text).
            code = compile(source, "<string>", "exec", dont_inherit=True)
            self.fresh[key] = marshal.dumps(code)
        else:
            self.hits += 1
        exec(code, names, local_names)

    def _kept(self, key: bytes) -> CodeType | None:
        """The code kept for a digest, if any: compiled earlier in this start (two classes
        can be given the same text), or read."""
        piece = self.fresh.get(key) or self._piece(key)
        return None if piece is None else _code(piece)

    def _piece(self, key: bytes) -> memoryview | None:
        """The marshalled code the block holds for a digest: none for a text not there, or
        one the index does not place inside the block."""
        place = self.index.get(key)
        if not (isinstance(place, tuple) and len(place) == 2):
            return None
        start, end = place
        if type(start) is not int or type(end) is not int:
            return None
        return memoryview(self.block)[start:end] if 0 <= start < end <= len(self.block) else None

    def entries(self) -> dict[bytes, bytes | memoryview]:
        """Every text's marshalled code: read and compiled; past ``MAX_ENTRIES``, only what
        this start used. What a file held that no text could be keyed by, or that lies
        outside its block, is not kept."""
        kept: dict[bytes, bytes | memoryview] = {
            key: piece
            for key in self.index
            if isinstance(key, bytes) and len(key) == DIGEST and (piece := self._piece(key))
        }
        kept.update(self.fresh)
        if len(kept) > MAX_ENTRIES:
            used = frozenset(self.used)  # a thread may still be making a class
            kept = {key: code for key, code in kept.items() if key in used}
        return kept


def _code(piece: bytes | memoryview) -> CodeType | None:
    """The code object ``piece`` holds, or None if it holds anything else."""
    try:
        code = marshal.loads(piece)
    except Exception:  # marshal raises many kinds (SystemError too) on bytes it did not write
        return None
    return code if type(code) is CodeType else None


_window: _Window | None = None


def enabled() -> bool:
    """Whether the cache applies: not where it could not tell the file is the user's own (no
    ``geteuid``) or could not key it (no BLAKE2), nor when ``GPUTOP_STOCK_TEXTUAL`` names it
    or turns every patch off."""
    off = stock_names()
    usable = blake2b is not None and hasattr(os, "geteuid")
    return usable and off is not None and NAME not in off


def cache_path() -> Path | None:
    """Where the cache lies: the bytecode folder of gputop's package, as Python names it from
    the package's path (None when Python has none to give)."""
    package = Path(__file__).parents[1]
    try:
        bytecode = importlib.util.cache_from_source(str(package / "__init__.py"))
    except (NotImplementedError, ValueError):
        return None
    level = f".opt-{sys.flags.optimize}" if sys.flags.optimize else ""
    name = f"dataclass-code.{sys.implementation.cache_tag}{level}.marshal"
    return Path(bytecode).with_name(name)


def read(path: Path) -> tuple[Index, Block]:
    """The index and block kept at ``path``, the block a view of the mapping the file was read
    into; nothing if the file cannot be trusted or read, or is not whole."""
    nothing: tuple[Index, Block] = ({}, b"")
    try:
        # Not through a link, and never waiting on a FIFO: only a regular file is read.
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return nothing
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            return nothing
        if status.st_uid not in (os.geteuid(), 0) or status.st_mode & 0o022:
            return nothing
        if status.st_size <= HEADER:
            return nothing
        # An anonymous mapping the file is read into: handed back whole like a file's
        # mapping, but a private copy that a file cut or rewritten in place cannot change
        # (SIGBUS) under the digest already checked.
        mapped = mmap.mmap(-1, status.st_size)
        with memoryview(mapped) as into:
            done = 0
            while done < status.st_size:
                got = os.readv(descriptor, [into[done:]])
                if not got:
                    return nothing
                done += got
    except (OSError, ValueError):
        return nothing
    finally:
        os.close(descriptor)
    # Views of the mapping only: nothing of it is copied again.
    view = memoryview(mapped)
    if view[: len(FORMAT)] != FORMAT or digest(view[CHECKED:]) != view[len(FORMAT) : CHECKED]:
        return nothing
    length = int.from_bytes(view[CHECKED:HEADER], "little")
    try:
        index = marshal.loads(view[HEADER : HEADER + length])
    except Exception:  # marshal raises many kinds (SystemError too) on bytes it did not write
        return nothing
    if not isinstance(index, dict):
        return nothing
    return index, view[HEADER + length :]


def write(path: Path, entries: Mapping[bytes, bytes | memoryview]) -> None:
    """Keep ``entries`` (digest -> marshalled code) at ``path`` for later starts
    (atomically; nothing if it cannot)."""
    assert blake2b is not None  # enabled() says so before anything is kept
    index: Index = {}
    start = 0
    for key, code in entries.items():
        index[key] = (start, start + len(code))
        start += len(code)
    packed = marshal.dumps(index)
    length = len(packed).to_bytes(8, "little")
    # The pieces are written one by one, never joined: see the module's docstring.
    check = blake2b(length, digest_size=DIGEST)
    check.update(packed)
    for code in entries.values():
        check.update(code)
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # A new file (never one a link points to), writable by its owner alone whatever the
        # umask lets the group do (002 where users have groups of their own): read() trusts
        # nothing others may write.
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with open(descriptor, "wb") as file:
            file.write(FORMAT + check.digest() + length)
            file.write(packed)
            for code in entries.values():
                file.write(code)
        os.replace(temporary, path)
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)


def begin(path: Path | None = None) -> None:
    """Serve ``dataclasses``' compiling from the cache until ``end`` (nothing if it is off
    or already begun). ``path``: the file (tests); by default ``cache_path()``."""
    global _window
    if _window is not None or not enabled():
        return
    if path is None:
        path = cache_path()
    index, block = read(path) if path is not None else ({}, b"")
    _window = _Window(path, index, block)
    # A module global of dataclasses' is found before the builtin it shadows.
    dataclasses.exec = _window.serve  # type: ignore[attr-defined]


def end() -> None:
    """Give ``dataclasses`` back its ``exec``; keep what this start compiled for the next
    (nothing if not begun)."""
    global _window
    window, _window = _window, None
    if window is None:
        return
    if getattr(dataclasses, "exec", None) == window.serve:
        del dataclasses.exec  # type: ignore[attr-defined]
    if window.path is None or not window.fresh or sys.dont_write_bytecode:
        return
    write(window.path, window.entries())


def counts() -> tuple[int, int] | None:
    """This start's texts found in the cache and compiled anew, while begun (tests read it)."""
    return None if _window is None else (_window.hits, len(_window.fresh))
