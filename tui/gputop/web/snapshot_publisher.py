"""`gputop serve`'s end of the snapshot socket: what the one sampler publishes, sent to every
viewer (the wire, and a viewer's end, are ``gputop.sources.serve_socket``'s)."""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
import threading
from collections import deque
from pathlib import Path

from gputop.model import Snapshot
from gputop.sources.serve_socket import frame

SEND_TIMEOUT = 5.0
"""Seconds a viewer may keep the sampler waiting on a full socket before it is dropped."""


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
        self._send(frame("snapshot", snapshot), keep=True)
        self.published += 1

    def fail(self, message: str) -> None:
        """Tell every viewer the last sample failed (its data is now stale)."""
        self._send(frame("error", message), keep=False)

    def _send(self, data: bytes, *, keep: bool) -> None:
        with self._lock:
            if keep:
                self._frames.append(data)
            for subscriber in list(self._subscribers):
                try:
                    subscriber.sendall(data)
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
                    connection.sendall(frame("hello", (self.interval, len(frames))))
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


def private_socket_dir() -> Path:
    """A new directory only this user can enter, for the publisher's socket."""
    directory = Path(tempfile.mkdtemp(prefix="gputop-serve-"))
    os.chmod(directory, 0o700)
    return directory
