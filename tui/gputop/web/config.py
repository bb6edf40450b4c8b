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
import secrets
import ssl
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import bcrypt
import yaml

from gputop.errors import BadArguments

_NOT_YET_VALID = 9
_EXPIRED = 10
"""OpenSSL's X509_V_ERR_CERT_NOT_YET_VALID and X509_V_ERR_CERT_HAS_EXPIRED."""
_TLS_KEYS = {"cert_file", "key_file", "min_version", "max_version"}
_TOP_KEYS = {"tls_server_config", "basic_auth_users"}
_TLS_VERSIONS = {
    "TLS10": ssl.TLSVersion.TLSv1,
    "TLS11": ssl.TLSVersion.TLSv1_1,
    "TLS12": ssl.TLSVersion.TLSv1_2,
    "TLS13": ssl.TLSVersion.TLSv1_3,
}


_MAX_DUMMY_COST = 14
"""About a second of bcrypt: the dearest dummy hash made at start."""


@dataclass(frozen=True)
class WebConfig:
    """What the server needs: a TLS context (None: plain HTTP) and the users' hashes."""

    tls: ssl.SSLContext | None = None
    users: dict[str, bytes] = field(default_factory=dict)
    """User name -> bcrypt hash; empty: no authentication."""
    warnings: tuple[str, ...] = ()
    """What is served but will not work for clients (an expired certificate), one line each."""


class Authenticator:
    """Checks basic-auth credentials against bcrypt hashes.

    bcrypt is slow on purpose (tens of ms at cost 10): a scrape every few seconds would pay
    that each time, so a pair once verified is remembered (by a keyed digest, never the
    password itself), as the exporter toolkit caches its checks. An unknown user's password
    is checked too, against a hash of nothing anyone can type made at the users' own cost,
    as the toolkit does: a refusal takes as long whether the user exists or not, so timing
    tells no user names.
    """

    def __init__(self, users: dict[str, bytes]) -> None:
        """Accept the users of ``users`` (name -> bcrypt hash)."""
        self._users = users
        self._key = hashlib.sha256(repr(sorted(users.items())).encode()).digest()
        self._good: set[bytes] = set()
        self._lock = threading.Lock()
        self._dummy = _dummy_hash(users.values()) if users else b""

    @property
    def required(self) -> bool:
        """Whether any credentials are asked for."""
        return bool(self._users)

    def check(self, user: str, password: str) -> bool:
        """True when ``password`` is ``user``'s."""
        hashed = self._users.get(user)
        known = hashed is not None
        token = hmac.new(self._key, f"{user}\0{password}".encode(), "sha256").digest()
        if known:
            with self._lock:
                if token in self._good:
                    return True
        try:
            good = bcrypt.checkpw(password.encode(), hashed if hashed is not None else self._dummy)
        except ValueError:
            return False
        if good and known:
            with self._lock:
                self._good.add(token)
        return good and known


def _dummy_hash(hashes: Iterable[bytes]) -> bytes:
    """A bcrypt hash at the cost most of ``hashes`` have (``$2y$10$...``: 10), of random
    bytes: what an unknown user's password is checked against."""
    costs = []
    for hashed in hashes:
        try:
            costs.append(int(hashed.split(b"$")[2]))
        except (IndexError, ValueError):
            continue
    cost = max(set(costs), key=costs.count) if costs else 10
    # Capped: a cost of 31 in a config would hold the start for days, not time one check.
    rounds = min(max(cost, 4), _MAX_DUMMY_COST)
    return bcrypt.hashpw(secrets.token_bytes(16), bcrypt.gensalt(rounds=rounds))


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
    tls = _tls(data.get("tls_server_config"), path.parent, where)
    warnings: tuple[str, ...] = ()
    if tls is not None:
        section = data["tls_server_config"]
        problem = certificate_problem(tls, path.parent / str(section["cert_file"]))
        if problem is not None:
            warnings = (f"warning: {where}: {problem}",)
    return WebConfig(tls=tls, users=_users(data.get("basic_auth_users"), where), warnings=warnings)


def certificate_problem(server: ssl.SSLContext, cert_file: Path) -> str | None:
    """What makes clients refuse ``server``'s certificate on its own account (expired, not
    valid yet), or None. Found by a TLS handshake in memory against a client that trusts the
    certificate itself: the check every client makes, without parsing a certificate here."""
    client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client.check_hostname = False
    try:
        client.load_verify_locations(cert_file)
    except (OSError, ssl.SSLError):
        return None
    client.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN  # the certificate is its own anchor
    to_server, to_client = ssl.MemoryBIO(), ssl.MemoryBIO()
    ours = client.wrap_bio(to_client, to_server)
    theirs = server.wrap_bio(to_server, to_client, server_side=True)
    try:
        for _ in range(8):  # a handshake is two or three round trips
            done = 0
            for side in (ours, theirs):
                try:
                    side.do_handshake()
                    done += 1
                except ssl.SSLWantReadError:
                    pass
            if done == 2:
                return None
    except ssl.SSLCertVerificationError as error:
        state = {_EXPIRED: "has expired", _NOT_YET_VALID: "is not valid yet"}
        if error.verify_code in state:
            return (
                f"the TLS certificate {cert_file} {state[error.verify_code]}: clients that "
                "check it (Prometheus does) will refuse every scrape"
            )
    except ssl.SSLError:
        pass  # a version or cipher this check does not share: no verdict
    return None


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
