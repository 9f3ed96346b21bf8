"""Calls to a SuperLink's Control API, made in this process and signed one by one.

fedstruct submits runs, registers SuperNodes, asks a run's status and fetches a run's
results (:func:`pull_results`, a call of fedstruct's own on the SuperLink: see
:mod:`fedstruct.deployment.results`) with Flower's own protobuf-over-HTTP client (the
one its ``flwr`` CLI uses, taken through :mod:`~fedstruct.fl.flower.adapter`), not
through the CLI: each
request is signed for itself just before it is sent (:class:`SignedCalls`), with a
token bound to that call and its arguments
(:func:`~fedstruct.fl.flower.credentials.call_binding`) and a fresh nonce, which the
SuperLink accepts once (:mod:`fedstruct.fl.flower.guard`). The token lives in this
process's memory for one request: nothing is written to ``$FLWR_HOME`` (Flower's CLI
would keep it in ``credentials.yaml``, where anyone who could read the file could use
it for any call until it expires).

Failures are one line: a SuperLink out of reach, a certificate that does not verify
against the CA given (:func:`tls_problem`), a call refused for want of a control key
(:class:`~fedstruct.fl.flower.cluster.ControlKeyRefused`), or Flower's own reason.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from fedstruct.errors import ConfigError, DeploymentError
from fedstruct.files import read_bytes
from fedstruct.fl.flower.cluster import ControlKeyRefused, Link
from fedstruct.fl.flower.credentials import call_binding, control_token

if TYPE_CHECKING:
    from fedstruct.fl.flower.adapter import ControlHttpClient

__all__ = [
    "RESULTS_PATH",
    "SignedCalls",
    "control_client",
    "pull_results",
    "register_node",
    "run_results_folder",
    "run_status",
    "start_run",
    "tls_problem",
    "unregister_node",
]

R = TypeVar("R")

#: The Control API path of fedstruct's results call (the SuperLink's guard serves it).
RESULTS_PATH = "/v1/control/fedstruct-results"

#: How Flower reports a Control API call refused for want of authentication.
_AUTH_FAILED = ("Authentication failed", "Not authenticated", "401 Unauthorized")


class SignedCalls:
    """A Flower HTTP-client interceptor that signs every request for itself with the
    private control key at ``key`` (``Authorization: Bearer TOKEN``)."""

    def __init__(self, key: Path) -> None:
        self.key = key

    def intercept(self, context: Any, call_next: Callable[[Any], Any]) -> Any:
        """Add a token bound to this request (Flower's ``ProtobufRequestContext``)."""
        token = control_token(self.key, call_binding(context.message))
        context.request.headers["Authorization"] = f"Bearer {token}"
        return call_next(context)


@contextmanager
def control_client(link: Link, key: Path | None) -> Iterator[ControlHttpClient]:
    """Flower's Control API client for the SuperLink at ``link``, signing with ``key``
    (``None``: unsigned calls, which a SuperLink with ``--control-keys`` refuses)."""
    from fedstruct.fl.flower import adapter

    ca = link.root_certificates
    client = adapter.control_client(
        link.address,
        None if ca is None else read_bytes(ca, "--root-certificates"),
        [] if key is None else [SignedCalls(key)],
    )
    try:
        yield client
    finally:
        client.close()


def _call(link: Link, key: Path | None, what: str, send: Callable[[ControlHttpClient], R]) -> R:
    """``send(client)``'s answer; its failure as one line naming ``what`` was asked.

    Raises
    ------
    ControlKeyRefused
        If the SuperLink refuses the call for want of a (valid, fresh) control token.
    DeploymentError
        If the SuperLink is out of reach, its certificate does not verify against the
        CA given, or it refuses or fails the call for another reason (Flower's).
    """
    import httpx

    from fedstruct.fl.flower.adapter import flower_error_reason

    try:
        with control_client(link, key) as client:
            return send(client)
    except httpx.RequestError as exc:
        problem = tls_problem(link)
        if problem is not None:
            raise DeploymentError(problem) from None
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise DeploymentError(
            f"cannot {what}: the SuperLink at {link.address} does not answer ({reason}); "
            "is 'fedstruct flower superlink' running there?"
        ) from None
    except httpx.HTTPStatusError as exc:
        told = flower_error_reason(exc.response.text)  # why, when the body is Flower's error
        reason = told if told is not None else exc.response.text or str(exc)
        reason = " ".join(str(reason).split())
        if exc.response.status_code == httpx.codes.UNAUTHORIZED or any(
            sign in reason for sign in _AUTH_FAILED
        ):
            raise ControlKeyRefused(_refusal(what, key)) from None
        raise DeploymentError(f"the SuperLink refused to {what}: {reason}") from None


def _refusal(what: str, key: Path | None) -> str:
    if key is None:
        fix = (
            "give --control-key KEY, the private key whose KEY.pub is in the SuperLink's "
            "--control-keys file"
        )
    else:
        fix = (
            f"its --control-keys file does not list {key}.pub, or the clocks differ by "
            "over 5 minutes (the SuperLink's log says why it refused)"
        )
    return f"the SuperLink refused to {what}: it answers only holders of a control key; {fix}"


def start_run(
    link: Link, key: Path | None, app: Path, config: Mapping[str, bool | int | float | str]
) -> int:
    """Submit the Flower App in folder ``app`` to the SuperLink, its run config
    overridden by ``config``; the run's id.

    Raises
    ------
    DeploymentError
        As :func:`_call` (the SuperLink's guard refuses an app that is not fedstruct's).
    """
    from fedstruct.fl.flower.adapter import app_bundle, start_run_request

    request = start_run_request(app_bundle(app), config)
    answer = _call(link, key, "submit a run", lambda client: client.StartRun(request))
    if not answer.HasField("run_id"):
        raise DeploymentError(f"the SuperLink at {link.address} started no run")
    return int(answer.run_id)


def register_node(link: Link, key: Path | None, public_key: bytes) -> int:
    """Register a SuperNode's public key (raw OpenSSH ``.pub`` bytes, checked by the
    caller) at the SuperLink; the node's id.

    Raises
    ------
    DeploymentError
        As :func:`_call` (e.g. a key registered before).
    """
    from cryptography.hazmat.primitives import serialization

    from fedstruct.fl.flower.adapter import register_node_request

    request = register_node_request(serialization.load_ssh_public_key(public_key))
    answer = _call(link, key, "register a node", lambda client: client.RegisterNode(request))
    return int(answer.node_id)


def unregister_node(link: Link, key: Path | None, node_id: int) -> None:
    """Unregister SuperNode ``node_id`` at the SuperLink: its key is refused from now on.

    Raises
    ------
    DeploymentError
        As :func:`_call` (e.g. no such node).
    """
    from fedstruct.fl.flower.adapter import unregister_node_request

    request = unregister_node_request(node_id)
    _call(link, key, "unregister a node", lambda client: client.UnregisterNode(request))


def _run(link: Link, key: Path | None, run_id: int) -> Any:
    """What the SuperLink knows of run ``run_id`` (Flower's ``Run`` message).

    Raises
    ------
    DeploymentError
        As :func:`_call`; for a run the SuperLink does not know, one line saying so.
    """
    from fedstruct.fl.flower.adapter import list_runs_request

    request = list_runs_request(run_id)
    unknown = DeploymentError(
        f"the SuperLink at {link.address} knows no run {run_id}; give the run id "
        "'fedstruct run' printed (flower_run in its folder's run.json)"
    )
    try:
        answer = _call(link, key, "tell a run's status", lambda client: client.ListRuns(request))
    except ControlKeyRefused:
        raise
    except DeploymentError as exc:
        if "not found" in str(exc).lower():
            raise unknown from None
        raise
    if int(run_id) not in answer.run_dict:
        raise unknown
    return answer.run_dict[int(run_id)]


def run_status(link: Link, key: Path | None, run_id: int) -> tuple[str, str]:
    """Run ``run_id``'s status (``"running"``, ``"finished:completed"``...) and details.

    Raises
    ------
    DeploymentError
        As :func:`_run`.
    """
    status = _run(link, key, run_id).status
    text = f"{status.status}:{status.sub_status}" if status.sub_status else status.status
    return text, status.details


def run_results_folder(link: Link, key: Path | None, run_id: int) -> tuple[str, str, str]:
    """Run ``run_id``'s status (as :func:`run_status`), the results folder its run
    config names (``out``: a name in the SuperLink's runs folder) and its method.

    Raises
    ------
    DeploymentError
        As :func:`_run`, or for a run that is not fedstruct's (no results folder).
    """
    run = _run(link, key, run_id)
    status = run.status
    text = f"{status.status}:{status.sub_status}" if status.sub_status else status.status
    folder, method = (_config_string(run.override_config, name) for name in ("out", "method"))
    if not folder:
        raise DeploymentError(f"run {run_id} names no results folder: it is not a fedstruct run")
    return text, folder, method


def _config_string(config: Any, name: str) -> str:
    """The string ``name`` of a Flower run config (``""`` if it has none)."""
    value = config.get(name)
    return value.string if value is not None and value.WhichOneof("scalar") == "string" else ""


def pull_results(link: Link, key: Path | None, request: str) -> bytes:
    """The SuperLink's answer to a results request (JSON: see
    :mod:`fedstruct.deployment.results`), a signed call of its own.

    Raises
    ------
    DeploymentError
        As :func:`_call` (the SuperLink's one-line refusal, e.g. no such folder).
    """
    from google.protobuf.wrappers_pb2 import BytesValue, StringValue  # type: ignore[import-untyped]

    from fedstruct.fl.flower.adapter import call_control_route

    answer = _call(
        link,
        key,
        "fetch a run's results",
        lambda client: call_control_route(
            client, RESULTS_PATH, StringValue(value=request), BytesValue
        ),
    )
    return bytes(answer.value)


def tls_problem(link: Link, timeout: float = 30.0) -> str | None:
    """Why the SuperLink at ``link`` cannot be trusted with its CA (one line): its
    certificate does not verify against ``link.root_certificates``, or is not valid for
    the host it is reached at; ``None`` if it verifies, or for a plain-text link or a
    SuperLink that does not answer (which other messages report).

    Raises
    ------
    ConfigError
        If the CA file is not a PEM certificate.
    """
    ca = link.root_certificates
    if ca is None:
        return None
    try:
        context = ssl.create_default_context(cadata=read_bytes(ca, "--root-certificates").decode())
    except (ssl.SSLError, ValueError, UnicodeDecodeError):
        raise ConfigError(
            f"--root-certificates {ca} is not a PEM certificate; give the ca.crt made by "
            "'fedstruct flower certificates' (or your organisation's CA certificate)"
        ) from None
    context.set_alpn_protocols(["h2"])
    try:
        with (
            socket.create_connection((link.host, link.port), timeout=timeout) as raw,
            context.wrap_socket(raw, server_hostname=link.host),
        ):
            return None
    except ssl.SSLCertVerificationError as exc:
        reason = exc.verify_message or str(exc)
        return (
            f"the SuperLink at {link.address} presented a certificate that does not verify "
            f"against the CA in --root-certificates {ca} ({reason}); give the ca.crt made "
            "with the SuperLink's certificates, and an address they name (--host)"
        )
    except OSError:
        return None
