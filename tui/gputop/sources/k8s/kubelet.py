"""Where the kubelet's PodResources socket is, and whether it is here: asked by every live
start, so kept apart from the client (``podresources``), which loads only on a node."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

DEFAULT_SOCKET = Path("/var/lib/kubelet/pod-resources/kubelet.sock")
SOCKET_VARIABLE = "GPUTOP_PODRESOURCES_SOCKET"
"""Overrides where the kubelet's socket is (a DaemonSet may mount it elsewhere)."""


def socket_path(environ: Mapping[str, str]) -> Path:
    """``$GPUTOP_PODRESOURCES_SOCKET``, else the kubelet's default."""
    given = environ.get(SOCKET_VARIABLE)
    return Path(given) if given else DEFAULT_SOCKET


def kubelet_socket(environ: Mapping[str, str]) -> Path | None:
    """The kubelet's socket when it exists (None: not a node, or not mounted in)."""
    socket = socket_path(environ)
    try:
        return socket if socket.is_socket() else None
    except OSError:
        return None
