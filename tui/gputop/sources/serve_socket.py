"""One sampler, many viewers: snapshots passed from `gputop serve` to its browser viewers.

textual-serve starts one app process per browser connection. Were each of them to open NVML,
every open tab would add a full set of driver calls per second. Instead the server samples
once (``SnapshotPublisher``) and each viewer subscribes to it over a Unix socket in a
directory only the server's user can enter (``SnapshotSubscriber``): it gets the recent
snapshots first (its history and sparklines are full from the first frame), then each new one
as it is taken.

The wire is a 4-byte big-endian length and a pickle of ``(kind, value)``: ``("hello",
(interval, backlog count))``, ``("snapshot", Snapshot)``, ``("error", text)``. Pickle is safe
here only because both ends are the same user's gputop and the socket's directory is private
(0700); it is never read from anything a browser sends.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import socket
import struct
import threading
from collections import deque
from pathlib import Path

from gputop.errors import BadArguments
from gputop.model import Snapshot

_LENGTH = struct.Struct(">I")
MAX_FRAME = 64 * 1024 * 1024
"""A frame longer than this is not gputop's (a 64-GPU box with thousands of processes is
well under a megabyte)."""

SEND_TIMEOUT = 5.0
"""Seconds a viewer may keep the sampler waiting on a full socket before it is dropped."""


def _frame(kind: str, value: object) -> bytes:
    payload = pickle.dumps((kind, value), protocol=pickle.HIGHEST_PROTOCOL)
    return _LENGTH.pack(len(payload)) + payload


class SnapshotPublisher:
    """The server's end: keeps the last ``backlog`` snapshots and sends each new one to every
    subscriber. ``publish`` is called by the one sampler thread; accepting runs on its own."""

    def __init__(self, path: Path, *, interval: float, backlog: int = 600) -> None:
        """Listen on the Unix socket ``path`` (its directory must be private)."""
        self.path = path
        self.interval = interval
        self._frames: deque[bytes] = deque(maxlen=backlog)
        self._lock = threading.Lock()
        self._subscribers: list[socket.socket] = []
        self._closed = threading.Event()
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(path))
        self._listener.listen(64)
        self._thread = threading.Thread(target=self._accept, name="gputop-publisher", daemon=True)
        self._thread.start()
        self.published = 0
        """Snapshots published so far (tests and benchmarks read it)."""

    def publish(self, snapshot: Snapshot) -> None:
        """Send ``snapshot`` to every viewer (pickled once) and keep it for later ones."""
        self._send(_frame("snapshot", snapshot), keep=True)
        self.published += 1

    def fail(self, message: str) -> None:
        """Tell every viewer the last sample failed (its data is now stale)."""
        self._send(_frame("error", message), keep=False)

    def _send(self, frame: bytes, *, keep: bool) -> None:
        with self._lock:
            if keep:
                self._frames.append(frame)
            for subscriber in list(self._subscribers):
                try:
                    subscriber.sendall(frame)
                except OSError:
                    # Gone, or stuck for SEND_TIMEOUT: the other viewers must not wait on it.
                    self._subscribers.remove(subscriber)
                    subscriber.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return  # closed
            connection.settimeout(SEND_TIMEOUT)
            with self._lock:
                frames = list(self._frames)
                try:
                    connection.sendall(_frame("hello", (self.interval, len(frames))))
                    connection.sendall(b"".join(frames))
                except OSError:
                    connection.close()
                    continue
                self._subscribers.append(connection)

    def close(self) -> None:
        """Stop accepting and hang up on every viewer."""
        self._closed.set()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with self._lock:
            for subscriber in self._subscribers:
                subscriber.close()
            self._subscribers.clear()
        with contextlib.suppress(OSError):
            self.path.unlink()


class SnapshotSubscriber:
    """A viewer's end: a reader thread queues what the server sends; ``take`` hands it over."""

    def __init__(self, path: Path, *, timeout: float = 10.0) -> None:
        """Connect to the server at ``path`` and read its greeting and backlog.

        Raises:
            BadArguments: nothing serves at ``path``, or it is not gputop's server.
        """
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._socket.settimeout(timeout)
            self._socket.connect(str(path))
            kind, value = self._read()
        except (OSError, EOFError, pickle.UnpicklingError) as error:
            self._socket.close()
            raise BadArguments(f"no gputop server at {path}: {error}") from None
        if kind != "hello" or not isinstance(value, tuple):
            self._socket.close()
            raise BadArguments(f"{path} is not a gputop server")
        self.interval = float(value[0])
        """The server's sampling interval."""
        self._condition = threading.Condition()
        self._queue: deque[Snapshot] = deque(maxlen=max(int(value[1]), 1) + 3600)
        self._error: str | None = None
        self._ended: str | None = None
        for _ in range(int(value[1])):
            kind, item = self._read()
            if isinstance(item, Snapshot):
                self._queue.append(item)
        self._socket.settimeout(None)
        self._thread = threading.Thread(target=self._run, name="gputop-subscriber", daemon=True)
        self._thread.start()

    def _read_exactly(self, size: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < size:
            chunk = self._socket.recv(size - len(chunks))
            if not chunk:
                raise EOFError("the server hung up")
            chunks += chunk
        return bytes(chunks)

    def _read(self) -> tuple[str, object]:
        (size,) = _LENGTH.unpack(self._read_exactly(_LENGTH.size))
        if size > MAX_FRAME:
            raise EOFError(f"a frame of {size} bytes")
        kind, value = pickle.loads(self._read_exactly(size))
        return str(kind), value

    def _run(self) -> None:
        try:
            while True:
                kind, value = self._read()
                with self._condition:
                    if kind == "snapshot" and isinstance(value, Snapshot):
                        self._queue.append(value)
                        self._error = None
                    elif kind == "error":
                        self._error = str(value)
                    self._condition.notify_all()
        except (OSError, EOFError, pickle.UnpicklingError, ValueError) as error:
            with self._condition:
                self._ended = f"the gputop server stopped sending ({error})"
                self._condition.notify_all()

    def take(self, wait: float = 0.0) -> list[Snapshot]:
        """Every snapshot received since the last call, oldest first; waits up to ``wait``
        seconds for one when there is none."""
        with self._condition:
            if not self._queue and wait > 0 and self._ended is None:
                self._condition.wait(wait)
            taken = list(self._queue)
            self._queue.clear()
            return taken

    @property
    def error(self) -> str | None:
        """The server's last sample failed, or the server has gone."""
        with self._condition:
            return self._ended or self._error

    def close(self) -> None:
        """Hang up."""
        with contextlib.suppress(OSError):
            self._socket.shutdown(socket.SHUT_RDWR)
        self._socket.close()


def private_socket_dir() -> Path:
    """A new directory only this user can enter, for the publisher's socket."""
    # Deferred: tempfile (14 ms, 13 modules), for the server, not each viewer.
    import tempfile

    directory = Path(tempfile.mkdtemp(prefix="gputop-serve-"))
    os.chmod(directory, 0o700)
    return directory
