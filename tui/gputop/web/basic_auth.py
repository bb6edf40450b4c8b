"""The credentials of an HTTP ``Authorization: Basic`` header, read alike by the exporter
(``metrics_server``, bcrypt hashes) and ``serve`` (``app_server``, its ``--auth-file``).

Its own module: ``serve`` checks credentials without loading the web config's YAML and bcrypt.
"""

from __future__ import annotations

import base64
import binascii


def basic_credentials(header: str | None) -> tuple[str, str] | None:
    """The (user, password) of an ``Authorization: Basic`` header; None when there is no
    header, another scheme (case-insensitive, RFC 7235) or no ``user:password`` in base64."""
    scheme, _, encoded = (header or "").strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, sep, password = decoded.partition(":")
    return (user, password) if sep else None
