"""Privacy: the message audit (no client sends rows of its data) and DP accounting."""

from fedstruct.privacy.audit import (
    Payload,
    PayloadLimit,
    RowIndex,
    audit_description,
    audit_reply,
)

__all__ = ["Payload", "PayloadLimit", "RowIndex", "audit_description", "audit_reply"]
