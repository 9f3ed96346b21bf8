"""TLS certificates for a SuperLink and authentication keys for SuperNodes.

- :func:`make_certificates`: a certificate authority (``ca.crt``/``ca.key``) and a
  server certificate (``server.pem``/``server.key``) signed by it, valid for the
  SuperLink's host names and IP addresses. SuperNodes and the ``flwr`` CLI trust
  ``ca.crt``; the SuperLink serves ``server.pem``.
- :func:`make_node_key`: an ECDSA P-384 key pair in OpenSSH format, the format
  Flower 1.41 registers (``flwr supernode register NAME.pub``) and SuperNodes sign
  with (``--auth-supernode-private-key NAME``). Each institution makes its own and
  sends only the ``.pub`` file to the SuperLink's operator.

Generated with the ``cryptography`` package (a Flower dependency), so no ``openssl``
binary is needed.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from fedstruct.errors import ConfigError

__all__ = ["Certificates", "make_certificates", "make_node_key"]


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
    path.parent.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP384R1())
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
