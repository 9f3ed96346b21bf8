"""The cryptographic building blocks of secure aggregation, each one call into a
maintained library (nothing here is a primitive written by hand).

- key agreement: X25519 (``cryptography``), one key pair to encrypt the shares
  sent to neighbours and one from which the pairwise masks derive;
- key derivation: HKDF-SHA256 (``cryptography``), bound to the protocol session and
  to the purpose of the key (share encryption, pairwise mask, self mask);
- mask expansion: the ChaCha20 keystream of a derived key (``cryptography``), read
  as little-endian ``uint64`` words;
- share encryption between two clients (relayed by the server): AES-256-GCM
  (``cryptography``) with a random 96-bit nonce and the session, sender and
  receiver as associated data;
- secret sharing: Shamir's scheme over GF(2^128) (pycryptodome's
  ``Crypto.Protocol.SecretSharing.Shamir``), on 16-byte secrets; a 32-byte key is
  shared as two halves.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence

import numpy as np
from Crypto.Protocol.SecretSharing import Shamir
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from numpy.typing import NDArray

from fedstruct.errors import ProtocolError

__all__ = [
    "SECRET_BYTES",
    "combine_secret",
    "decrypt_share",
    "derive_key",
    "encrypt_share",
    "key_pair",
    "mask_stream",
    "private_bytes",
    "private_key",
    "public_bytes",
    "shared_key",
    "split_secret",
]

#: Length of a secret that Shamir's scheme shares in one piece.
SECRET_BYTES = 16
_NONCE_BYTES = 12
_RAW = serialization.Encoding.Raw


def key_pair() -> tuple[X25519PrivateKey, bytes]:
    """A fresh X25519 key pair: the private key and the raw 32-byte public key."""
    private = X25519PrivateKey.generate()
    return private, public_bytes(private)


def public_bytes(private: X25519PrivateKey) -> bytes:
    """The raw 32-byte public key of ``private``."""
    return private.public_key().public_bytes(_RAW, serialization.PublicFormat.Raw)


def private_bytes(private: X25519PrivateKey) -> bytes:
    """The raw 32-byte private key (to be secret-shared, never stored)."""
    return private.private_bytes(
        _RAW, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )


def private_key(raw: bytes) -> X25519PrivateKey:
    """The X25519 private key of 32 raw bytes."""
    return X25519PrivateKey.from_private_bytes(raw)


def derive_key(material: bytes, purpose: bytes, session: bytes) -> bytes:
    """A 32-byte key from ``material`` by HKDF-SHA256, bound to ``purpose`` and the
    protocol ``session`` (RFC 5869; ``info = purpose || session``)."""
    hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=purpose + b"|" + session)
    return hkdf.derive(material)


def shared_key(
    private: X25519PrivateKey, peer_public: bytes, purpose: bytes, session: bytes
) -> bytes:
    """The key two clients agree on: HKDF of their X25519 shared secret.

    Raises
    ------
    ProtocolError
        If ``peer_public`` is not a valid 32-byte X25519 public key.
    """
    try:
        peer = X25519PublicKey.from_public_bytes(peer_public)
        secret = private.exchange(peer)
    except ValueError as exc:
        raise ProtocolError(
            f"secure aggregation: a peer's public key is not valid ({exc})"
        ) from None
    return derive_key(secret, purpose, session)


def mask_stream(key: bytes, length: int) -> NDArray[np.uint64]:
    """``length`` pseudo-random ``uint64`` words: the ChaCha20 keystream of ``key``
    (a fresh key per session, so the all-zero nonce is used once per key)."""
    cipher = Cipher(algorithms.ChaCha20(key, bytes(16)), mode=None)
    stream = cipher.encryptor().update(bytes(8 * length))
    return np.frombuffer(stream, dtype="<u8").astype(np.uint64, copy=False)


def _associated(session: bytes, sender: int, receiver: int) -> bytes:
    return b"fedstruct-secagg-share|" + session + struct.pack(">II", sender, receiver)


def encrypt_share(
    key: bytes, plaintext: bytes, session: bytes, sender: int, receiver: int
) -> bytes:
    """AES-256-GCM encryption of a share from ``sender`` to ``receiver`` (nonce first)."""
    nonce = os.urandom(_NONCE_BYTES)
    sealed = AESGCM(key).encrypt(nonce, plaintext, _associated(session, sender, receiver))
    return nonce + sealed


def decrypt_share(
    key: bytes, ciphertext: bytes, session: bytes, sender: int, receiver: int
) -> bytes:
    """Inverse of :func:`encrypt_share`.

    Raises
    ------
    ProtocolError
        If the ciphertext was altered, or is not from ``sender`` to ``receiver`` in
        this session.
    """
    nonce, sealed = ciphertext[:_NONCE_BYTES], ciphertext[_NONCE_BYTES:]
    try:
        return AESGCM(key).decrypt(nonce, sealed, _associated(session, sender, receiver))
    except InvalidTag:
        raise ProtocolError(
            f"secure aggregation: the share from node {sender} to node {receiver} does not "
            "decrypt (altered in transit, or from another session)"
        ) from None


def split_secret(secret: bytes, threshold: int, holders: int) -> list[bytes]:
    """Shamir shares of a 16-byte ``secret``: ``holders`` shares (share ``i`` for the
    holder at position ``i``), any ``threshold`` of which give it back."""
    if len(secret) != SECRET_BYTES:
        raise ProtocolError(f"a shared secret has {SECRET_BYTES} bytes, got {len(secret)}")
    shares = Shamir.split(threshold, holders, secret)
    return [share for _, share in sorted(shares)]


def combine_secret(shares: Sequence[tuple[int, bytes]]) -> bytes:
    """The secret from shares ``(position, share)`` (positions as in
    :func:`split_secret`, from 0); at least the threshold of them."""
    return Shamir.combine([(position + 1, share) for position, share in shares])
