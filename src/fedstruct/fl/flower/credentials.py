"""TLS certificates for a SuperLink and authentication keys for SuperNodes.

- :func:`make_certificates`: a certificate authority (``ca.crt``/``ca.key``) and a
  server certificate (``server.pem``/``server.key``) signed by it, valid for the
  SuperLink's host names and IP addresses. SuperNodes and the ``flwr`` CLI trust
  ``ca.crt``; the SuperLink serves ``server.pem``.
- :func:`make_node_key`: an ECDSA P-384 key pair in OpenSSH format, the format
  Flower 1.41 registers (``flwr supernode register NAME.pub``) and SuperNodes sign
  with (``--auth-supernode-private-key NAME``). Each institution makes its own and
  sends only the ``.pub`` file to the SuperLink's operator.
- :func:`make_control_key`: an Ed25519 key pair in OpenSSH format for whoever may use
  the SuperLink's Control API (submit runs, register nodes). The SuperLink holds the
  public keys (:func:`load_control_keys`); every ``flwr`` call made by fedstruct
  carries a short-lived token signed with the private key (:func:`control_token`),
  which the SuperLink checks (:func:`verify_control_token`) before it answers.

Generated with the ``cryptography`` package (a Flower dependency), so no ``openssl``
binary is needed.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import ipaddress
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from fedstruct.errors import ConfigError

__all__ = [
    "TOKEN_LIFETIME",
    "Certificates",
    "control_token",
    "load_control_keys",
    "make_certificates",
    "make_control_key",
    "make_node_key",
    "verify_control_token",
]

#: Seconds a control token stays valid, either side of its time (clock skew included).
TOKEN_LIFETIME = 300
_TOKEN_VERSION = "fsc1"


@dataclass(frozen=True)
class Certificates:
    """Paths of the files :func:`make_certificates` wrote."""

    ca_cert: Path
    ca_key: Path
    server_cert: Path
    server_key: Path


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "fedstruct federation"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _write_key(path: Path, key: rsa.RSAPrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def make_certificates(
    folder: Path, hosts: Sequence[str] = ("127.0.0.1", "localhost"), days: int = 365
) -> Certificates:
    """Write a CA and a SuperLink server certificate for ``hosts`` into ``folder``.

    Parameters
    ----------
    folder
        Where to write ``ca.crt``, ``ca.key``, ``server.pem`` and ``server.key``.
    hosts
        Names and IP addresses the SuperLink is reached at (subject alternative
        names); include ``127.0.0.1``: the SuperLink's own helper processes connect
        to it there.
    days
        Validity.

    Raises
    ------
    ConfigError
        If no host is given.
    """
    if not hosts:
        raise ConfigError("give at least one host name or IP address for the certificate")
    folder.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC)
    until = now + dt.timedelta(days=days)

    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("fedstruct federation CA"))
        .issuer_name(_name("fedstruct federation CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(until)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )

    alt_names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            alt_names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            alt_names.append(x509.DNSName(host))
    server_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    server_cert = (
        x509.CertificateBuilder()
        .subject_name(_name(hosts[0]))
        .issuer_name(ca_cert.subject)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(until)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    out = Certificates(
        ca_cert=folder / "ca.crt",
        ca_key=folder / "ca.key",
        server_cert=folder / "server.pem",
        server_key=folder / "server.key",
    )
    out.ca_cert.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    _write_key(out.ca_key, ca_key)
    out.server_cert.write_bytes(server_cert.public_bytes(serialization.Encoding.PEM))
    _write_key(out.server_key, server_key)
    return out


def make_node_key(path: Path, comment: str | None = None) -> tuple[Path, Path]:
    """Write a SuperNode key pair: ``path`` (private) and ``path.pub`` (to register).

    Returns
    -------
    tuple
        The private and public key paths.
    """
    return _write_key_pair(path, ec.generate_private_key(ec.SECP384R1()), comment)


def make_control_key(path: Path, comment: str | None = None) -> tuple[Path, Path]:
    """Write a control key pair: ``path`` (private, keep it) and ``path.pub`` (give it to
    the SuperLink: ``fedstruct flower superlink --control-keys FILE``).

    Returns
    -------
    tuple
        The private and public key paths.
    """
    return _write_key_pair(path, ed25519.Ed25519PrivateKey.generate(), comment)


def _write_key_pair(
    path: Path, key: ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey, comment: str | None
) -> tuple[Path, Path]:
    """Write ``key`` to ``path`` (OpenSSH PEM, readable by its owner only) and its public
    half to ``path.pub`` (one OpenSSH line ending with ``comment``, default the file name)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.OpenSSH,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    pub_path = path.with_name(path.name + ".pub")
    pub_path.write_bytes(public + b" " + (comment or path.name).encode() + b"\n")
    return path, pub_path


def _fingerprint(key: ed25519.Ed25519PublicKey) -> str:
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def load_control_keys(path: Path) -> dict[str, ed25519.Ed25519PublicKey]:
    """The control public keys in ``path`` (one OpenSSH ``ssh-ed25519`` key a line;
    blank lines and ``#`` comments are skipped), by fingerprint.

    Raises
    ------
    ConfigError
        If the file is missing, holds no key, or a line is not an Ed25519 public key.
    """
    if not Path(path).is_file():
        raise ConfigError(f"--control-keys {path} does not exist; give the file of public keys")
    keys: dict[str, ed25519.Ed25519PublicKey] = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            key = serialization.load_ssh_public_key(line.strip().encode())
        except (ValueError, TypeError, UnsupportedAlgorithm):
            key = None
        if not isinstance(key, ed25519.Ed25519PublicKey):
            raise ConfigError(
                f"line {number} of --control-keys {path} is not an Ed25519 public key; "
                "make keys with 'fedstruct flower control-key PATH' and list the PATH.pub lines"
            )
        keys[_fingerprint(key)] = key
    if not keys:
        raise ConfigError(f"--control-keys {path} holds no public key")
    return keys


def _load_private_control_key(path: Path) -> ed25519.Ed25519PrivateKey:
    if not Path(path).is_file():
        raise ConfigError(f"--control-key {path} does not exist; give the private key file")
    try:
        key = serialization.load_ssh_private_key(Path(path).read_bytes(), password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        key = None
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise ConfigError(
            f"--control-key {path} is not an Ed25519 private key in OpenSSH format; "
            "make one with 'fedstruct flower control-key PATH'"
        )
    return key


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def control_token(path: Path, now: float | None = None) -> str:
    """A token for the Control API, signed with the private control key at ``path``;
    valid :data:`TOKEN_LIFETIME` seconds.

    Raises
    ------
    ConfigError
        If the file is missing or not an Ed25519 private key.
    """
    key = _load_private_control_key(path)
    issued = int(time.time() if now is None else now)
    body = f"{_TOKEN_VERSION}.{_fingerprint(key.public_key())}.{issued}.{secrets.token_hex(8)}"
    return f"{body}.{_b64(key.sign(body.encode()))}"


def verify_control_token(
    token: str, keys: dict[str, ed25519.Ed25519PublicKey], now: float | None = None
) -> str | None:
    """Why ``token`` is refused (one line), or ``None`` if one of ``keys`` signed it
    within :data:`TOKEN_LIFETIME` seconds of ``now``."""
    parts = token.split(".")
    if len(parts) != 5 or parts[0] != _TOKEN_VERSION:
        return "not a fedstruct control token"
    _, fingerprint, issued, _, signature = parts
    key = keys.get(fingerprint)
    if key is None:
        return f"control key {fingerprint} is not among the SuperLink's --control-keys"
    if not issued.isdigit() or abs((time.time() if now is None else now) - int(issued)) > (
        TOKEN_LIFETIME
    ):
        return "the control token has expired (or the clocks differ by over 5 minutes)"
    try:
        key.verify(base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4)),
                   token.rpartition(".")[0].encode())  # fmt: skip
    except (InvalidSignature, ValueError):
        return "the control token's signature does not match its key"
    return None
