"""What a SuperNode approves: ``fedstruct flower supernode --approve FILE``.

The file (YAML, or JSON for a ``.json`` name) lists the methods the node runs, each
with any settings or with exactly the settings of one digest::

    approve:
      - fedavg                 # fedavg, with any settings
      - fedfci@3f2a...9c       # fedfci with exactly these settings (64 hex digits)

A digest is :func:`~fedstruct.runs.digest.settings_digest` of the run's method and
settings on the ``flower`` backend: ``fedstruct flower approve`` prints it (and the
line to add) for a method's settings or a prepared run's folder, and a run's
``run.json`` records it. The node's ClientApp reads the file for every message and
refuses any run it does not approve before it answers anything, so before any data
are read (:func:`refusal`); a file it cannot read refuses every run. Light to import:
the check runs before anything of a method is imported.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fedstruct.errors import ConfigError, DeploymentError
from fedstruct.files import parse_json, parse_yaml, read_text
from fedstruct.runs.digest import settings_digest

__all__ = ["APPROVE", "BACKEND", "Approval", "approval_line", "check_approved", "read_approval"]

#: The node-config key naming the node's approval file (an absolute path).
APPROVE = "approve"
#: The backend every digest is taken on: a node runs deployed runs only.
BACKEND = "flower"
#: The largest approval file read (a list of lines).
_LIMIT = 1024 * 1024
_DIGEST = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Approval:
    """The runs a node approves.

    Parameters
    ----------
    any_settings
        Methods approved with any settings.
    digests
        Method -> the settings digests it is approved with (exactly those settings).
    path
        The file, named in messages.
    """

    any_settings: frozenset[str] = frozenset()
    digests: Mapping[str, frozenset[str]] = field(default_factory=dict)
    path: Path | None = None

    def approves(self, method: str, digest: str) -> bool:
        """Whether ``method`` with settings of ``digest`` may run."""
        return method in self.any_settings or digest in self.digests.get(method, ())

    def summary(self) -> str:
        """What the file approves, in words (for a refusal)."""
        parts = [f"{m} (any settings)" for m in sorted(self.any_settings)]
        for method in sorted(set(self.digests) - self.any_settings):
            n = len(self.digests[method])
            parts.append(f"{method} ({n} settings digest{'s' if n != 1 else ''})")
        return ", ".join(parts) or "nothing"


def approval_line(method: str, digest: str | None = None) -> str:
    """The line of an approval file that approves ``method`` (with exactly the settings
    of ``digest``, if given)."""
    return f"- {method}" + (f"@{digest}" if digest else "")


def read_approval(path: Path, methods: Collection[str] | None = None) -> Approval:
    """Read a node's approval file (module docstring).

    Parameters
    ----------
    path
        The file: YAML, or JSON if its name ends in ``.json``.
    methods
        The method names fedstruct knows (``None``: not checked), so that a misspelt
        name is refused when the node starts.

    Raises
    ------
    ConfigError
        One line naming the file: missing or not a regular file, not YAML/JSON, not a
        mapping with one ``approve`` list of ``METHOD`` or ``METHOD@DIGEST`` strings,
        a digest that is not 64 hex digits, or a method fedstruct does not know.
    """
    where = f"approval file {path}"
    text = read_text(path, "approval file", limit=_LIMIT)
    data = (parse_json if path.suffix.lower() == ".json" else parse_yaml)(text, where)
    if not isinstance(data, dict) or set(data) != {"approve"}:
        raise ConfigError(
            f"{where} must be a mapping with one key, 'approve': a list of METHOD (any "
            "settings) or METHOD@DIGEST lines (fedstruct flower approve prints them)"
        )
    entries = data["approve"]
    if not isinstance(entries, list):
        raise ConfigError(f"{where}: 'approve' must be a list of METHOD or METHOD@DIGEST lines")
    any_settings: set[str] = set()
    digests: dict[str, set[str]] = {}
    for number, entry in enumerate(entries, 1):
        method, digest = _entry(entry, f"{where}, entry {number}")
        if methods is not None and method not in methods:
            raise ConfigError(
                f"{where}, entry {number}: fedstruct has no method {method!r}; "
                f"its methods are {', '.join(sorted(methods))}"
            )
        if digest is None:
            any_settings.add(method)
        else:
            digests.setdefault(method, set()).add(digest)
    return Approval(frozenset(any_settings), {m: frozenset(d) for m, d in digests.items()}, path)


def _entry(entry: Any, where: str) -> tuple[str, str | None]:
    """An entry's method and digest (``None``: any settings)."""
    if not isinstance(entry, str) or not entry.strip():
        raise ConfigError(f"{where} must be a string METHOD or METHOD@DIGEST, not {entry!r}")
    method, sep, digest = entry.strip().partition("@")
    method, digest = method.strip(), digest.strip().lower()
    if not method:
        raise ConfigError(f"{where} names no method: write METHOD or METHOD@DIGEST")
    if sep and not _DIGEST.fullmatch(digest):
        raise ConfigError(
            f"{where}: {digest!r} is not a settings digest (64 hex digits); copy the line "
            "'fedstruct flower approve' prints"
        )
    return method, digest if sep else None


def check_approved(node: str, path: Path, method: str, settings: Mapping[str, Any]) -> None:
    """Refuse a run node ``node`` does not approve, by its approval file ``path``.

    Raises
    ------
    DeploymentError
        One line naming the node, the method, the run's settings digest, what the
        file approves and the line that would approve the run; or, if the file cannot
        be read now, why (every run is refused then).
    """
    digest = settings_digest(method, settings, BACKEND)
    try:
        approval = read_approval(path)
    except ConfigError as exc:
        raise DeploymentError(f"{node} refuses every run: {exc}") from None
    if approval.approves(method, digest):
        return
    raise DeploymentError(
        f"{node} does not approve this run: its approval file approves "
        f"{approval.summary()}, not {method} with settings digest {digest}; its operator "
        f"approves it by adding the line '{approval_line(method, digest)}' under 'approve:' "
        "(fedstruct flower approve prints it)"
    )
