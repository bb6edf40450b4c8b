"""Reading `gputop export`'s output in tests: series by name and labels, the documents a
capture holds, and a web config with a self-signed certificate and a bcrypt password."""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

import bcrypt
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from prometheus_client.parser import text_string_to_metric_families

from gputop.model import Snapshot
from gputop.sources.recordings.formats import open_recording

Series = dict[tuple[str, tuple[tuple[str, str], ...]], float]
"""(metric name, sorted label pairs) -> value."""


def series(text: str) -> Series:
    """Every sample of an exposition, parsed by prometheus-client, under its name as written."""
    out: Series = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            name = sample.name
            if family.type == "counter" and name == family.name + "_total":
                name = family.name  # the parser's OpenMetrics suffix: not in the text
            out[(name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def find(values: Series, name: str, **labels: str) -> list[float]:
    """The values of ``name``'s series that carry every one of ``labels``."""
    return [
        value
        for (metric, pairs), value in values.items()
        if metric == name and all((k, v) in pairs for k, v in labels.items())
    ]


def document(path: Path, index: int = 0) -> Snapshot:
    """Document ``index`` (negative: from the end) of a recording in any format."""
    recording = open_recording(path)
    try:
        return recording.snapshot(index % len(recording))
    finally:
        recording.close()


def self_signed(directory: Path, *, expired: bool = False) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key, written in ``directory``
    (``expired``: one that ended yesterday)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=30 if expired else 0, minutes=5))
        .not_valid_after(now + datetime.timedelta(days=-1 if expired else 1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "server.crt", directory / "server.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


def web_config(directory: Path, password: bytes = b"s3cret", *, expired: bool = False) -> Path:
    """An exporter-toolkit web config in ``directory``: TLS with :func:`self_signed`'s
    certificate, and user ``alice`` with ``password`` (bcrypt, spelled ``$2y$`` as
    htpasswd writes it)."""
    cert, key = self_signed(directory, expired=expired)
    hashed = bcrypt.hashpw(password, bcrypt.gensalt(rounds=6)).decode().replace("$2b$", "$2y$")
    config = directory / "web-config.yml"
    config.write_text(
        f"tls_server_config:\n  cert_file: {cert.name}\n  key_file: {key.name}\n"
        f"basic_auth_users:\n  alice: {hashed}\n"
    )
    return config
