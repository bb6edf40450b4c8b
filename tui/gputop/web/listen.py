"""Why a server could not listen, in the words a user acts on (one line, no errno)."""

from __future__ import annotations

import errno


def cannot_listen(error: OSError, server: str) -> str:
    """The reason ``error`` (from binding) gives, naming the kind of ``server`` that may
    already hold the port ("exporter", "server")."""
    if error.errno == errno.EADDRINUSE:
        return f"the address is already in use (another {server} on that port?)"
    if error.errno == errno.EACCES:
        return "permission denied (ports below 1024 need privileges)"
    if error.errno == errno.EADDRNOTAVAIL:
        return "that address is not one of this machine's"
    return error.strerror or str(error)
