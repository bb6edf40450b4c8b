"""One sampler, many viewers: snapshots passed from `gputop serve` to its browser viewers.

textual-serve starts one app process per browser connection. Were each of them to open NVML,
every open tab would add a full set of driver calls per second. Instead the server samples
once and publishes each snapshot (``gputop.web.snapshot_publisher``), and each viewer
subscribes to it over a Unix socket in a directory only the server's user can enter
(``SnapshotSubscriber``, here: a viewer's source): it gets the recent snapshots first (its
history and sparklines are full from the first frame), then each new one as it is taken.

The wire is a 4-byte big-endian length and a pickle of ``(kind, value)``: ``("hello",
(interval, backlog count))``, ``("snapshot", Snapshot)``, ``("error", text)``. Pickle is safe
here only because both ends are the same user's gputop and the socket's directory is private
(0700); it is never read from anything a browser sends.
"""

from __future__ import annotations

import contextlib
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


def frame(kind: str, value: object) -> bytes:
    """One frame of the wire: ``kind`` and ``value`` as the module says."""
    payload = pickle.dumps((kind, value), protocol=pickle.HIGHEST_PROTOCOL)
    return _LENGTH.pack(len(payload)) + payload


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
