"""The message kinds of the secure-aggregation protocol and their fields.

One protocol session sums one summable request's replies in four exchanges, all
within one round of the grid (Bonawitz et al. 2017, §4, rounds 0-3, with SecAgg+'s
sparse graph):

1. :data:`KEYS` — each client makes two X25519 key pairs and sends the public keys;
2. :data:`SHARE` — each client receives its neighbours' public keys, draws its
   self-mask seed, Shamir-shares the seed and its mask key among its neighbours,
   and sends each share encrypted for its holder (the server only relays);
3. :data:`MASK` — each client receives the encrypted shares addressed to it and the
   inner request, answers that request with the method's own handler (audited as
   any reply), and sends the answer quantised and masked;
4. :data:`UNMASK` — each client receives who of its neighbours sent a masked answer
   and who dropped out, and sends, per neighbour, the share of its self-mask seed
   (a survivor) or of its mask key (a dropout), never both.
"""

from __future__ import annotations

__all__ = [
    "INNER",
    "KEYS",
    "MASK",
    "PREFIX",
    "SHARE",
    "UNMASK",
    "inner_fields",
]

#: Every protocol kind starts with this; a client answers them generically.
PREFIX = "secagg."
KEYS = "secagg.keys"
SHARE = "secagg.share"
MASK = "secagg.mask"
UNMASK = "secagg.unmask"
#: Prefix of the inner request's arrays, config and metrics inside a :data:`MASK`
#: message (its kind travels as ``config["secagg.inner_kind"]``).
INNER = "inner."

# Config keys of the protocol messages.
SESSION = "secagg.session"
NODE = "secagg.node"
INNER_KIND = "secagg.inner_kind"
NEIGHBOURS = "secagg.neighbours"
SHARE_KEYS = "secagg.share_keys"
MASK_KEYS = "secagg.mask_keys"
THRESHOLD = "secagg.threshold"
RECEIVERS = "secagg.receivers"
SENDERS = "secagg.senders"
SHARES = "secagg.shares"
BITS = "secagg.bits"
WEIGHT = "secagg.weight"
CLIENTS = "secagg.clients"
LAYOUT = "secagg.layout"
MASKED = "secagg.masked"
SURVIVORS = "secagg.survivors"
DROPPED = "secagg.dropped"
SEED_FROM = "secagg.seed_from"
SEED_SHARES = "secagg.seed_shares"
KEY_FROM = "secagg.key_from"
KEY_SHARES = "secagg.key_shares"

#: What a share's plaintext holds after the sender and receiver ids: the share of
#: the self-mask seed (16 bytes) and the two shares of the mask key's halves.
SEED_SHARE = slice(8, 24)
KEY_SHARE = slice(24, 56)

# Purposes bound into the derived keys (crypto.derive_key).
SHARE_PURPOSE = b"fedstruct-secagg share encryption"
PAIR_PURPOSE = b"fedstruct-secagg pairwise mask"
SELF_PURPOSE = b"fedstruct-secagg self mask"


def inner_fields(prefixed: dict, strip: bool) -> dict:
    """The inner request's fields: keys under :data:`INNER` with the prefix removed
    (``strip``), or every key prefixed (not ``strip``)."""
    if strip:
        return {k[len(INNER) :]: v for k, v in prefixed.items() if k.startswith(INNER)}
    return {INNER + k: v for k, v in prefixed.items()}
