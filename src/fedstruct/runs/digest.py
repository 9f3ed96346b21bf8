"""The settings digest: one SHA-256 names a run's method, settings and backend.

A run records it in ``run.json`` (``settings_digest``: a folder holding this very run
is picked up, another refused), and a SuperNode started with ``--approve FILE``
compares it with the digests its operator approved (``fedstruct flower approve``
prints it). One function serves both, so the digest a node computes of a submitted
run is the one the run's folder records. Light to import: a node computes it before
it imports anything of a method.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["settings_digest"]


def settings_digest(method: str, settings: Mapping[str, Any], backend: str | None) -> str:
    """SHA-256 (hex) of ``method``, ``settings`` and ``backend`` as sorted JSON.

    The settings are read as JSON sees them (a tuple as a list, a path as its text), so
    the settings a run resolved and the same settings after a trip through JSON (a
    deployed run's config, ``config.json``) have one digest.
    """
    plain = json.loads(json.dumps(dict(settings), default=str))
    text = json.dumps(
        {"backend": backend, "method": method, "settings": plain}, sort_keys=True, default=str
    )
    return hashlib.sha256(text.encode()).hexdigest()
