"""``--web-config-file``: TLS and basic auth in the Prometheus exporter-toolkit format.

The file node_exporter and dcgm-exporter take (``--web.config.file``; dcgm-exporter's
``tests/integration/testdata/web-config.yml``)::

    tls_server_config:
      cert_file: server.crt
      key_file: server.key
    basic_auth_users:
      alice: $2y$10$...          # bcrypt hash (htpasswd -nBC 10 "" | tr -d ':')

Relative paths are read from the file's directory, as the toolkit does. Keys this exporter
does not implement (client certificates, HTTP/2 and header settings) are refused by name
rather than ignored: a config that asks for client certificates must not be served without.
"""

from __future__ import annotations

import hashlib
import hmac
import ssl
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import bcrypt
import yaml

from gputop.errors import BadArguments

_TLS_KEYS = {"cert_file", "key_file", "min_version", "max_version"}
_TOP_KEYS = {"tls_server_config", "basic_auth_users"}
_TLS_VERSIONS = {
    "TLS10": ssl.TLSVersion.TLSv1,
    "TLS11": ssl.TLSVersion.TLSv1_1,
    "TLS12": ssl.TLSVersion.TLSv1_2,
    "TLS13": ssl.TLSVersion.TLSv1_3,
}


@dataclass(frozen=True)
class WebConfig:
    """What the server needs: a TLS context (None: plain HTTP) and the users' hashes."""

    tls: ssl.SSLContext | None = None
    users: dict[str, bytes] = field(default_factory=dict)
    """User name -> bcrypt hash; empty: no authentication."""


class Authenticator:
    """Checks basic-auth credentials against bcrypt hashes.

    bcrypt is slow on purpose (tens of ms at cost 10): a scrape every few seconds would pay
    that each time, so a pair once verified is remembered (by a keyed digest, never the
    password itself), as the exporter toolkit caches its checks.
    """

    def __init__(self, users: dict[str, bytes]) -> None:
        """Accept the users of ``users`` (name -> bcrypt hash)."""
        self._users = users
        self._key = hashlib.sha256(repr(sorted(users.items())).encode()).digest()
        self._good: set[bytes] = set()
        self._lock = threading.Lock()

    @property
    def required(self) -> bool:
        """Whether any credentials are asked for."""
        return bool(self._users)

    def check(self, user: str, password: str) -> bool:
        """True when ``password`` is ``user``'s."""
        hashed = self._users.get(user)
        if hashed is None:
            return False
        token = hmac.new(self._key, f"{user}\0{password}".encode(), "sha256").digest()
        with self._lock:
            if token in self._good:
                return True
        try:
            good = bcrypt.checkpw(password.encode(), hashed)
        except ValueError:
            return False
        if good:
            with self._lock:
                self._good.add(token)
        return good


def load_web_config(path: Path) -> WebConfig:
    """Read ``path``.

    Raises:
        BadArguments: unreadable, not YAML, an unknown key, a hash that is not bcrypt, or
            a certificate or key that cannot be loaded (one line naming what).
    """
    where = f"--web-config-file {path}"
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        raise BadArguments(f"{where}: cannot read it: {reason}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        at = f" (line {mark.line + 1})" if mark is not None else ""
        raise BadArguments(f"{where}: not valid YAML{at}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise BadArguments(f"{where}: expected a mapping of settings")
    unknown = sorted(set(map(str, data)) - _TOP_KEYS)
    if unknown:
        raise BadArguments(f"{where}: unsupported setting {unknown[0]!r}")
    return WebConfig(
        tls=_tls(data.get("tls_server_config"), path.parent, where),
        users=_users(data.get("basic_auth_users"), where),
    )


def _tls(section: Any, base: Path, where: str) -> ssl.SSLContext | None:
    if section is None:
        return None
    if not isinstance(section, dict):
        raise BadArguments(f"{where}: tls_server_config must be a mapping")
    unknown = sorted(set(map(str, section)) - _TLS_KEYS)
    if unknown:
        raise BadArguments(f"{where}: unsupported tls_server_config setting {unknown[0]!r}")
    cert, key = section.get("cert_file"), section.get("key_file")
    if not cert or not key:
        raise BadArguments(f"{where}: tls_server_config needs cert_file and key_file")
    cert_path, key_path = base / str(cert), base / str(key)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = _version(section.get("min_version", "TLS12"), where)
    if "max_version" in section:
        context.maximum_version = _version(section["max_version"], where)
    try:
        context.load_cert_chain(cert_path, key_path)
    except FileNotFoundError as error:
        raise BadArguments(f"{where}: {error.filename or cert_path}: no such file") from None
    except (OSError, ssl.SSLError) as error:
        reason = getattr(error, "reason", None) or getattr(error, "strerror", None) or error
        raise BadArguments(
            f"{where}: cannot load the certificate {cert_path} and key {key_path}: {reason}"
        ) from None
    return context


def _version(name: Any, where: str) -> ssl.TLSVersion:
    version = _TLS_VERSIONS.get(str(name))
    if version is None:
        raise BadArguments(f"{where}: unknown TLS version {name!r} (TLS10 to TLS13)")
    return version


def _users(section: Any, where: str) -> dict[str, bytes]:
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise BadArguments(f"{where}: basic_auth_users must map user names to bcrypt hashes")
    users: dict[str, bytes] = {}
    for user, hashed in section.items():
        text = str(hashed) if hashed is not None else ""
        if not text.startswith(("$2a$", "$2b$", "$2y$")):
            raise BadArguments(f"{where}: the password of {user!r} is not a bcrypt hash")
        users[str(user)] = text.encode()
    return users
