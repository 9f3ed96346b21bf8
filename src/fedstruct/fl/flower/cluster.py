"""Flower deployment processes and the ``flwr`` control commands, for Flower 1.41 and 1.42.

- A **SuperLink** (``flower-superlink``) serves SuperNodes, the ``flwr`` CLI and its
  ServerApp runtime on one host:port. It is always started with
  ``--disable-runtime-dependency-installation`` (no package downloads at run time).
- A **SuperNode** (``flower-supernode``) hosts one partition (``partition-id`` in its
  node config) or one site's own file (``data``, ``site``) and has a runtime port of
  its own (several may share a machine). It runs with ``--isolation process``: its
  guard hands every ClientApp task to one warm worker per run
  (:mod:`fedstruct.fl.flower.dispatch`) instead of a process per message.
- The SuperLink runs with ``--isolation process``: its runs go to warm ServerApps
  (:mod:`fedstruct.fl.flower.serverapps`), not to a ``flower-superexec``. The
  environment puts this Python's ``bin`` directory first on ``PATH`` (the ``flwr`` CLI).
- Both daemons run under fedstruct's guards (:func:`guarded`,
  :mod:`fedstruct.fl.flower.guard`): the SuperLink answers its Control API only to
  holders of a control key, and both run fedstruct's app only.
- fedstruct's own calls to the SuperLink's Control API (submit a run, register a
  node, a run's status) are made in this process and signed one by one
  (:mod:`fedstruct.fl.flower.control`); nothing is stored in ``$FLWR_HOME``. The
  ``flwr`` CLI, for an operator's own use, finds the SuperLink through a named
  connection in ``$FLWR_HOME/config.toml`` (:func:`write_connection`); its exit codes
  are not reliable, so :func:`flwr_json` parses its JSON output.

Every function here only builds commands or talks to the given address; nothing is
sent anywhere else.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedstruct.errors import ConfigError, DeploymentError
from fedstruct.files import regular_file_error

__all__ = [
    "CONNECTION",
    "DEFAULT_SUPERLINK",
    "ControlKeyRefused",
    "DeploymentOptions",
    "Link",
    "check_port",
    "default_home",
    "flower_env",
    "flwr_json",
    "guarded",
    "superlink_command",
    "supernode_command",
    "wait_reachable",
    "write_connection",
]

#: The name of the SuperLink connection fedstruct writes into ``$FLWR_HOME/config.toml``.
CONNECTION = "fedstruct"
DEFAULT_SUPERLINK = "127.0.0.1:9091"


def default_home() -> Path:
    """``$FLWR_HOME`` if set, else ``~/.fedstruct/flower``."""
    return Path(os.environ.get("FLWR_HOME", Path.home() / ".fedstruct" / "flower"))


def flower_env(home: Path) -> dict[str, str]:
    """The environment for Flower processes: private home, no telemetry, our ``bin`` on
    PATH."""
    env = dict(os.environ)
    env["FLWR_HOME"] = str(home)
    env["FLWR_TELEMETRY_ENABLED"] = "0"
    env["FLWR_DISABLE_UPDATE_CHECK"] = "1"
    env["FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION"] = "1"
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def _require_file(path: Path | None, flag: str) -> None:
    """Refuse a ``path`` that is missing or not a regular file (one line naming ``flag``)."""
    problem = None if path is None else regular_file_error(path, flag)
    if problem is not None:
        raise ConfigError(problem)


def check_port(port: int, flag: str) -> int:
    """``port`` if it is a TCP port number (1 to 65535).

    Raises
    ------
    ConfigError
        Otherwise, one line naming ``flag``.
    """
    if not 1 <= port <= 65535:
        raise ConfigError(f"{flag} {port} is not a port number; give one from 1 to 65535")
    return port


@dataclass(frozen=True)
class Link:
    """How to reach a SuperLink: its address and, for TLS, the CA certificate to trust.

    ``root_certificates = None`` means an insecure (plain-text) connection.
    """

    address: str = DEFAULT_SUPERLINK
    root_certificates: Path | None = None

    def __post_init__(self) -> None:
        host, sep, port = self.address.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ConfigError(
                f"SuperLink address {self.address!r} is not host:port (e.g. 127.0.0.1:9091)"
            )
        if not 1 <= int(port) <= 65535:
            raise ConfigError(
                f"SuperLink address {self.address!r} has port {port}, which is not a port "
                "number; give one from 1 to 65535"
            )
        _require_file(self.root_certificates, "--root-certificates")

    @property
    def host(self) -> str:
        return self.address.rpartition(":")[0].strip("[]")

    @property
    def port(self) -> int:
        return int(self.address.rpartition(":")[2])


@dataclass(frozen=True)
class DeploymentOptions:
    """Where and how a deployed run is submitted (kept in ``config.json`` for resume).

    Parameters
    ----------
    superlink
        The SuperLink's ``host:port``.
    root_certificates
        CA certificate of a TLS SuperLink (``None``: insecure, loopback tests only).
    min_nodes
        SuperNodes to wait for before round 1 (0: every client).
    join_timeout, reply_timeout
        Seconds to wait for the nodes to connect, and for one exchange's answers.
    home
        ``FLWR_HOME`` the ``flwr`` CLI used; read from older ``config.json`` files,
        unused since fedstruct calls the SuperLink in its own process.
    control_key
        Private control key that signs every call to the SuperLink's Control API
        (``None``: unsigned calls, which a SuperLink with ``--control-keys`` refuses).
        ``config.json`` keeps its path (never the key), so ``--resume`` signs too.
    results
        The name of the run's results folder in the SuperLink's runs folder, chosen
        when the run is first submitted (``None`` until then), so that ``--resume``
        continues it there.
    """

    superlink: str = DEFAULT_SUPERLINK
    root_certificates: str | None = None
    min_nodes: int = 0
    join_timeout: float = 120.0
    reply_timeout: float = 600.0
    home: str | None = None
    control_key: str | None = None
    results: str | None = None

    def link(self) -> Link:
        """The SuperLink to talk to (checks the address and the certificate file)."""
        cert = Path(self.root_certificates) if self.root_certificates else None
        _require_file(self.key, "--control-key")
        return Link(self.superlink, cert)

    @property
    def key(self) -> Path | None:
        """The private control key that signs each call (``None``: unsigned calls)."""
        return Path(self.control_key) if self.control_key else None


def _require_checked_flower() -> None:
    """Refuse, in one line, a Flower the guards were not checked against
    (:func:`~fedstruct.fl.flower.adapter.require_checked_flower`): before a daemon's
    command waits for a SuperLink or writes anything."""
    from fedstruct.fl.flower.adapter import require_checked_flower

    require_checked_flower()


def guarded(cmd: Sequence[str]) -> list[str]:
    """``cmd`` (``flower-superlink ...`` or ``flower-supernode ...``) run under
    fedstruct's guards (:mod:`fedstruct.fl.flower.guard`), by this Python."""
    return [sys.executable, "-m", "fedstruct.fl.flower.guard", *cmd]


def superlink_command(
    host: str,
    port: int,
    *,
    certificates: Path | None = None,
    node_auth: bool = False,
    database: Path | None = None,
) -> list[str]:
    """The ``flower-superlink`` command line.

    Parameters
    ----------
    certificates
        Folder with ``ca.crt``, ``server.pem`` and ``server.key`` (see
        :func:`~fedstruct.fl.flower.credentials.make_certificates`); ``None`` runs
        insecure (plain text, for loopback tests only).
    node_auth
        Only SuperNodes whose public key was registered may connect (needs TLS).
    database
        SQLite file for the SuperLink's state, so SuperNodes survive its restart.

    Raises
    ------
    ConfigError
        If ``port`` is not a port number, a certificate file is missing, or node
        authentication is asked without TLS.
    DeploymentError
        If the installed Flower is not one fedstruct's guards were checked against.
    """
    cmd = ["flower-superlink", "--host", host, "--port", str(check_port(port, "--port"))]
    cmd.append("--disable-runtime-dependency-installation")
    cmd += ["--isolation", "process"]  # its runs go to warm ServerApps (fl.flower.serverapps)
    if certificates is None:
        if node_auth:
            raise ConfigError("node authentication needs TLS: give --certificates DIR")
        cmd.append("--insecure")
    else:
        files = {
            "--ssl-ca-certfile": "ca.crt",
            "--ssl-certfile": "server.pem",
            "--ssl-keyfile": "server.key",
        }
        for flag, name in files.items():
            _require_file(certificates / name, "certificate file")
            cmd += [flag, str(certificates / name)]
        if node_auth:
            cmd.append("--enable-supernode-auth")
    if database is not None:
        cmd += ["--database", str(database)]
    _require_checked_flower()
    return cmd


def supernode_command(
    partition: int | None,
    link: Link,
    *,
    port: int,
    auth_key: Path | None = None,
    node_config: Mapping[str, Any] | None = None,
) -> list[str]:
    """The ``flower-supernode`` command line for the node hosting ``partition`` (or,
    with ``partition=None``, what ``node_config`` names: e.g. a site's own file).

    Raises
    ------
    ConfigError
        For a negative partition, a port that is not one, a missing key file, or a key
        without TLS.
    DeploymentError
        If the installed Flower is not one fedstruct's guards were checked against.
    """
    if partition is not None and partition < 0:
        raise ConfigError(f"--partition {partition} must be 0 or more")
    _require_file(auth_key, "--auth-key")
    config = {**({} if partition is None else {"partition-id": partition}), **(node_config or {})}
    cmd = [
        "flower-supernode",
        "--superlink",
        link.address,
        "--host",
        "127.0.0.1",
        "--port",
        str(check_port(port, "--port")),
        "--isolation",
        "process",  # its ClientApp tasks go to warm workers (fl.flower.dispatch)
        "--node-config",
        " ".join(f"{k}={_node_config_value(v)}" for k, v in config.items()),
    ]
    if link.root_certificates is None:
        if auth_key is not None:
            raise ConfigError("--auth-key needs TLS: give --root-certificates CA.crt")
        cmd.append("--insecure")
    else:
        cmd += ["--root-certificates", str(link.root_certificates)]
        if auth_key is not None:
            cmd += ["--auth-supernode-private-key", str(auth_key)]
    _require_checked_flower()
    return cmd


def _node_config_value(value: Any) -> str:
    """``value`` as Flower's ``--node-config`` parser reads it back (TOML): JSON for a
    number, a bool or a string, but a TOML literal string (``'...'``, read verbatim) for
    a string holding ``"`` (a JSON text, e.g. the data sets a node offers).

    Raises
    ------
    ConfigError
        For a string holding both ``"`` and ``'``, which neither form carries.
    """
    if isinstance(value, str) and '"' in value:
        if "'" in value:
            raise ConfigError(f"node config value {value!r} holds both ' and \"; drop one")
        return f"'{value}'"
    return json.dumps(value)


def wait_reachable(link: Link, timeout: float) -> None:
    """Wait until something accepts TCP connections at the SuperLink's address.

    Raises
    ------
    DeploymentError
        One line naming the address, if nothing answers within ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    reason = "no answer"
    while True:
        try:
            with socket.create_connection((link.host, link.port), timeout=2.0):
                return
        except OSError as exc:
            reason = exc.strerror or str(exc)
        if time.monotonic() >= deadline:
            raise DeploymentError(
                f"the SuperLink at {link.address} is not reachable ({reason}) after "
                f"{timeout:.0f} s; start it with 'fedstruct flower superlink' or fix --superlink"
            )
        time.sleep(0.5)


def write_connection(home: Path, link: Link) -> Path:
    """Write ``$FLWR_HOME/config.toml`` with the :data:`CONNECTION` to ``link``."""
    home.mkdir(parents=True, exist_ok=True)
    lines = [
        "[superlink]",
        f'default = "{CONNECTION}"',
        "",
        f"[superlink.{CONNECTION}]",
        f'address = "{link.address}"',
    ]
    if link.root_certificates is None:
        lines.append("insecure = true")
    else:
        lines.append(f'root-certificates = "{Path(link.root_certificates).resolve()}"')
    path = home / "config.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def flwr_json(args: Sequence[str], home: Path, *, timeout: float = 120.0) -> dict[str, Any]:
    """Run ``flwr ARGS --format json`` (unsigned: for a SuperLink without control keys,
    e.g. a benchmark's loopback one) and return its parsed answer.

    Raises
    ------
    DeploymentError
        If the command fails or answers ``"success": false`` (one line, with Flower's
        reason).
    """
    cmd = ["flwr", *args, "--format", "json"]
    try:
        proc = subprocess.run(
            cmd,
            env=flower_env(home),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise DeploymentError(f"'flwr {args[0]}' did not answer within {timeout:.0f} s") from None
    text = proc.stdout.strip()
    start = text.find("{")
    try:
        answer = json.loads(text[start:]) if start >= 0 else {}
    except json.JSONDecodeError:
        answer = {}
    if not answer.get("success", False):
        reason = answer.get("error-message") or proc.stderr.strip() or text or "no output"
        raise DeploymentError(f"'flwr {args[0]}' failed: {' '.join(str(reason).split())}")
    return answer


class ControlKeyRefused(DeploymentError):
    """The SuperLink refused a Control API call for its token: none, a key it does not
    list, an expired token or a replayed one."""
