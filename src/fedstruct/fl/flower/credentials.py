"""TLS certificates for a SuperLink and authentication keys for SuperNodes.

- :func:`make_certificates`: a certificate authority (``ca.crt``/``ca.key``) and a
  server certificate (``server.pem``/``server.key``) signed by it, valid for the
  SuperLink's host names and IP addresses. SuperNodes and the ``flwr`` CLI trust
  ``ca.crt``; the SuperLink serves ``server.pem``.
- :func:`make_node_key`: an ECDSA P-384 key pair in OpenSSH format, the format
  Flower (1.41, 1.42) registers (``flwr supernode register NAME.pub``) and SuperNodes sign
  with (``--auth-supernode-private-key NAME``). Each institution makes its own and
  sends only the ``.pub`` file to the SuperLink's operator.
- :func:`make_control_key`: an Ed25519 key pair in OpenSSH format for whoever may use
  the SuperLink's Control API (submit runs, register nodes). The SuperLink holds the
  public keys (:func:`load_control_keys`); every Control API call made by fedstruct
  carries a token signed with the private key (:func:`control_token`) for that one
  call: it names the call and its arguments (:func:`call_binding`), a fresh nonce and
  its time. The SuperLink checks it (:func:`verify_control_token`), accepts each nonce
  once, and answers only the call the token names (:mod:`fedstruct.fl.flower.guard`).

None of them replaces a file that exists unless asked to (``overwrite``): a new CA
invalidates every ``ca.crt`` handed out, a new node or control key every registration
or ``--control-keys`` line of the old one.

Generated with the ``cryptography`` package (a Flower dependency), so no ``openssl``
binary is needed.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import ipaddress
import os
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from fedstruct.errors import ConfigError
from fedstruct.files import read_bytes, read_text

__all__ = [
    "TOKEN_LIFETIME",
    "Certificates",
    "ControlClaims",
    "ControlTokenError",
    "call_binding",
    "control_token",
    "load_control_key",
    "load_control_keys",
    "make_certificates",
    "make_control_key",
    "make_node_key",
    "verify_control_token",
]

#: Seconds a control token stays valid, either side of its time (clock skew included).
TOKEN_LIFETIME = 300
_TOKEN_VERSION = "fsc2"


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


def _write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path``, readable by its owner only from the first byte."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        os.fchmod(handle.fileno(), 0o600)  # a file that existed keeps its mode otherwise
        handle.write(data)


def _write_key(path: Path, key: rsa.RSAPrivateKey) -> None:
    _write_private(
        path,
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        ),
    )


def make_certificates(
    folder: Path,
    hosts: Sequence[str] = ("127.0.0.1", "localhost"),
    days: int = 365,
    *,
    overwrite: bool = False,
) -> Certificates:
    """Write a CA and a SuperLink server certificate for ``hosts`` into ``folder``.

    Writes ``ca.crt``, ``ca.key``, ``server.pem`` and ``server.key`` there and nothing
    else (the folder is made if missing).

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
    overwrite
        Replace those files if they exist. A new CA makes every ``ca.crt`` handed out
        before invalid: SuperNodes and submitters holding the old one can no longer
        connect until they get the new one.

    Raises
    ------
    ConfigError
        If no host is given, ``folder`` is a file, or one of the files exists and
        ``overwrite`` is false.
    """
    if not hosts:
        raise ConfigError("give at least one host name or IP address for the certificate")
    out = Certificates(
        ca_cert=folder / "ca.crt",
        ca_key=folder / "ca.key",
        server_cert=folder / "server.pem",
        server_key=folder / "server.key",
    )
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{folder} is a file; give a folder for the certificates")
    _refuse_existing(
        [out.ca_cert, out.ca_key, out.server_cert, out.server_key],
        overwrite,
        "replacing the CA invalidates every ca.crt handed out (each SuperNode and "
        "submitter needs the new one before it can connect again) and the SuperLink's "
        "server certificate with it",
    )
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

    out.ca_cert.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    _write_key(out.ca_key, ca_key)
    out.server_cert.write_bytes(server_cert.public_bytes(serialization.Encoding.PEM))
    _write_key(out.server_key, server_key)
    return out


def _refuse_existing(paths: Sequence[Path], overwrite: bool, consequence: str) -> None:
    """Refuse to replace a file of ``paths`` that exists unless ``overwrite`` (one line
    saying ``consequence``); refuse a folder in their place always."""
    for path in paths:
        if path.is_dir():
            raise ConfigError(f"{path} is a folder; give the path of a file to write")
    existing = [str(p) for p in paths if p.exists() or p.is_symlink()]
    if existing and not overwrite:
        raise ConfigError(
            f"{', '.join(existing)} already exist{'s' if len(existing) == 1 else ''}: "
            f"{consequence}; pass --overwrite to replace them, or choose another path"
        )


def make_node_key(
    path: Path, comment: str | None = None, *, overwrite: bool = False
) -> tuple[Path, Path]:
    """Write a SuperNode key pair: ``path`` (private) and ``path.pub`` (to register).

    Parameters
    ----------
    overwrite
        Replace the pair if it exists: the SuperLink then no longer admits this node
        until ``path.pub`` is registered again.

    Returns
    -------
    tuple
        The private and public key paths.

    Raises
    ------
    ConfigError
        If ``path`` or ``path.pub`` exists and ``overwrite`` is false, or is a folder.
    """
    return _write_key_pair(
        path,
        ec.generate_private_key(ec.SECP384R1()),
        comment,
        overwrite,
        "a new node key is admitted only once its .pub is registered at the SuperLink "
        "('fedstruct flower register'); until then this node is refused",
    )


def make_control_key(
    path: Path, comment: str | None = None, *, overwrite: bool = False
) -> tuple[Path, Path]:
    """Write a control key pair: ``path`` (private, keep it) and ``path.pub`` (give it to
    the SuperLink: ``fedstruct flower superlink --control-keys FILE``).

    Parameters
    ----------
    overwrite
        Replace the pair if it exists: the SuperLink refuses the new key's calls until
        its ``.pub`` line replaces the old one in ``--control-keys`` (and the SuperLink
        is restarted).

    Returns
    -------
    tuple
        The private and public key paths.

    Raises
    ------
    ConfigError
        If ``path`` or ``path.pub`` exists and ``overwrite`` is false, or is a folder.
    """
    return _write_key_pair(
        path,
        ed25519.Ed25519PrivateKey.generate(),
        comment,
        overwrite,
        "the SuperLink refuses a new control key's calls until its .pub line replaces "
        "the old one in the --control-keys file and the SuperLink is restarted",
    )


def _write_key_pair(
    path: Path,
    key: ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey,
    comment: str | None,
    overwrite: bool,
    consequence: str,
) -> tuple[Path, Path]:
    """Write ``key`` to ``path`` (OpenSSH PEM, readable by its owner only) and its public
    half to ``path.pub`` (one OpenSSH line ending with ``comment``, default the file name);
    an existing file is replaced only with ``overwrite`` (one line saying ``consequence``)."""
    pub_path = path.with_name(path.name + ".pub")
    _refuse_existing([path, pub_path], overwrite, consequence)
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_private(
        path,
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.OpenSSH,
            serialization.NoEncryption(),
        ),
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    pub_path.write_bytes(public + b" " + (comment or path.name).encode() + b"\n")
    return path, pub_path


def _fingerprint(key: ed25519.Ed25519PublicKey) -> str:
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


#: The largest key or key-list file read: a key is a few hundred bytes.
_KEY_FILE_LIMIT = 1024 * 1024


def load_control_keys(path: Path) -> dict[str, ed25519.Ed25519PublicKey]:
    """The control public keys in ``path`` (one OpenSSH ``ssh-ed25519`` key a line;
    blank lines and ``#`` comments are skipped), by fingerprint.

    Raises
    ------
    ConfigError
        If the file is missing, not a regular file, holds no key, or a line is not an
        Ed25519 public key.
    """
    keys: dict[str, ed25519.Ed25519PublicKey] = {}
    text = read_text(path, "--control-keys", limit=_KEY_FILE_LIMIT)
    for number, line in enumerate(text.splitlines(), start=1):
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


def load_control_key(path: Path) -> ed25519.Ed25519PrivateKey:
    """The private control key in ``path``.

    Raises
    ------
    ConfigError
        If the file is missing, a folder or another non-regular file, or not an
        Ed25519 private key in OpenSSH format.
    """
    data = read_bytes(path, "--control-key", limit=_KEY_FILE_LIMIT)
    try:
        key = serialization.load_ssh_private_key(data, password=None)
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


def call_binding(request: Any) -> str:
    """What a control token for the Control API call carrying ``request`` (a protobuf
    message) is bound to: SHA-256 over the request's type (one per call: start a run,
    register a node, list runs...) and its deterministic serialization (its arguments)."""
    name = request.DESCRIPTOR.full_name.encode()
    return hashlib.sha256(name + b"\n" + request.SerializeToString(deterministic=True)).hexdigest()


@dataclass(frozen=True)
class ControlClaims:
    """What a verified control token says.

    Attributes
    ----------
    key
        Fingerprint of the control key that signed it.
    issued
        Its time (seconds since the epoch).
    nonce
        128 random bits: the SuperLink accepts each once.
    binding
        The :func:`call_binding` of the only call it may make.
    """

    key: str
    issued: int
    nonce: str
    binding: str


class ControlTokenError(Exception):
    """A control token the SuperLink refuses; the message says why, in one line."""


def control_token(path: Path, binding: str, now: float | None = None) -> str:
    """A token for one Control API call (``binding``: its :func:`call_binding`), signed
    with the private control key at ``path``; valid :data:`TOKEN_LIFETIME` seconds, once.

    Raises
    ------
    ConfigError
        If the file is missing or not an Ed25519 private key.
    """
    key = load_control_key(path)
    issued = int(time.time() if now is None else now)
    fingerprint = _fingerprint(key.public_key())
    body = f"{_TOKEN_VERSION}.{fingerprint}.{issued}.{secrets.token_hex(16)}.{binding}"
    return f"{body}.{_b64(key.sign(body.encode()))}"


def verify_control_token(
    token: str, keys: dict[str, ed25519.Ed25519PublicKey], now: float | None = None
) -> ControlClaims:
    """The claims of ``token`` if one of ``keys`` signed it within :data:`TOKEN_LIFETIME`
    seconds of ``now`` (whether its nonce is fresh and its call the one it names is
    for the SuperLink to check: :mod:`fedstruct.fl.flower.guard`).

    Raises
    ------
    ControlTokenError
        Why it is refused (one line).
    """
    parts = token.split(".")
    if len(parts) != 6 or parts[0] != _TOKEN_VERSION:
        raise ControlTokenError("not a fedstruct control token")
    _, fingerprint, issued, nonce, binding, signature = parts
    key = keys.get(fingerprint)
    if key is None:
        raise ControlTokenError(
            f"control key {fingerprint} is not among the SuperLink's --control-keys"
        )
    if not issued.isdigit() or abs((time.time() if now is None else now) - int(issued)) > (
        TOKEN_LIFETIME
    ):
        raise ControlTokenError(
            "the control token has expired (or the clocks differ by over 5 minutes)"
        )
    try:
        key.verify(base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4)),
                   token.rpartition(".")[0].encode())  # fmt: skip
    except (InvalidSignature, ValueError):
        raise ControlTokenError("the control token's signature does not match its key") from None
    return ControlClaims(fingerprint, int(issued), nonce, binding)
