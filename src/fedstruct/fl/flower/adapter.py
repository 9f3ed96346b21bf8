"""Every Flower internal fedstruct uses, in one module, for the Flower versions it knows.

fedstruct uses Flower's public API (``flwr.app``, ``flwr.serverapp``, ``flwr.clientapp``,
``flwr.simulation`` and the public names of ``flwr.common``) where it needs it. What
that API does not offer it takes from Flower's internals, and only through this module:

- the **guards** (:mod:`~fedstruct.fl.flower.guard`) install fedstruct's checks in
  Flower's SuperLink and SuperNode processes: they replace the SuperLink's loader of its
  Control-API authentication plugin (:func:`replace_control_authn_plugin`), wrap its
  Control-API handlers (:func:`control_handlers`, :func:`wrap_start_run`), add a call
  of fedstruct's own to its Control API (:func:`add_control_route`: a run's results
  for whoever submitted it, :func:`call_control_route` on the caller's side) and wrap
  the SuperNode's pull of a message (:func:`wrap_message_pull`,
  :func:`store_error_reply`).
  Flower offers no hook for either (docs/deploy.md, "Flower internals fedstruct relies
  on", proposes two);
- a SuperNode's **warm workers** (:mod:`~fedstruct.fl.flower.dispatch`,
  :mod:`~fedstruct.fl.flower.worker`): the node's Runtime API client
  (:func:`runtime_client`), the acquisition of a ClientApp task
  (:func:`acquire_clientapp_task`) and the answer to one, as ``flwr-clientapp`` gives
  it, in a process that answers many (:func:`answer_clientapp_task`);
- **Control API calls** made in this process, each signed for itself
  (:mod:`~fedstruct.fl.flower.control`): the ``flwr`` CLI's HTTP client
  (:func:`control_client`), its app bundler (:func:`app_bundle`) and the requests
  (:func:`start_run_request`...), which Flower offers only as its CLI;
- **flower-sim** starts Ray as Flower's simulation would (:func:`start_ray_backend`);
- a reply's **error codes** (:data:`LOST_REPLY_CODES`).

:data:`SYMBOLS` lists each internal, what fedstruct relies on in it and why;
``tests/fl/test_flower_adapter.py`` checks each against the installed Flower (one
contract test per symbol). Importing this module refuses, in one line, a Flower whose
release series is not in :data:`CHECKED_FLOWER` (:func:`require_checked_flower`), so a
Flower upgrade fails when a Flower command starts, not deep in a run.

Only :mod:`flwr.common.constant` is imported with this module (it loads nothing more
than the public API does): the other internals load Flower's SuperLink, SuperNode or Ray
code (up to a second each), which a ClientApp process, started for every message of a
deployment, must not pay for. They are imported when first used.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from types import ModuleType
from typing import TYPE_CHECKING, Any

from fedstruct.errors import DeploymentError

if TYPE_CHECKING:
    from flwr.proto.control_pb2 import (
        ListRunsRequest,
        RegisterNodeRequest,
        StartRunRequest,
        UnregisterNodeRequest,
    )
    from flwr.supercore.auth.typing import (
        AccountAuthCredentials,
        AccountAuthLoginDetails,
        AccountInfo,
    )
    from flwr.supercore.control import ControlHttpClient
    from flwr.supercore.error import ApiErrorCode, FlowerError
    from flwr.superlink.auth_plugin import ControlAuthnPlugin

__all__ = [
    "ACCESS_TOKEN_KEY",
    "CHECKED_FLOWER",
    "CLIENTAPP_ISOLATION",
    "FLOWER_POLL_WAIT",
    "INVALID_APP_CODE",
    "LOST_REPLY_CODES",
    "MESSAGE_HANDLERS",
    "NO_ACCOUNT",
    "SUPEREXEC_AUTH_METHODS",
    "SUPEREXEC_SECRET_FLAG",
    "SYMBOLS",
    "AccountAuthCredentials",
    "AccountAuthLoginDetails",
    "AccountInfo",
    "ApiErrorCode",
    "ControlAuthnPlugin",
    "ControlHttpClient",
    "FlowerError",
    "FlowerSymbol",
    "acquire_clientapp_task",
    "acquire_serverapp_task",
    "add_control_route",
    "answer_clientapp_task",
    "app_bundle",
    "call_control_route",
    "control_client",
    "control_handlers",
    "flower_error_reason",
    "flower_version",
    "list_runs_request",
    "load_serverapp_runtime",
    "protobuf_media_type",
    "register_node_request",
    "replace_control_authn_plugin",
    "require_checked_flower",
    "run_serverapp_task",
    "run_superlink",
    "run_supernode",
    "runtime_client",
    "start_parent_monitor",
    "start_ray_backend",
    "start_run_request",
    "store_error_reply",
    "superlink_runtime_address",
    "unchecked_flower",
    "unregister_node_request",
    "wrap_message_polls",
    "wrap_message_pull",
    "wrap_start_run",
]

# ----------------------------------------------------------------- the version
#: The Flower release series whose internals this module was checked against
#: (``tests/fl/test_flower_adapter.py`` on each; pyproject's ``flower`` extra allows
#: exactly these). A new series is added here once those tests pass on it.
CHECKED_FLOWER = ("1.41", "1.42")
#: What to install instead of a Flower this module was not checked against.
_INSTALL = "pip install 'flwr[simulation]>=1.41,<1.43' (or 'fedstruct[flower]')"


def flower_version() -> str:
    """The installed Flower's version (from its package metadata, ``flwr`` or Flower's
    nightly ``flwr-nightly``: imports no Flower code).

    Raises
    ------
    DeploymentError
        If Flower is not installed.
    """
    for distribution in ("flwr", "flwr-nightly"):
        try:
            return version(distribution)
        except PackageNotFoundError:
            pass
    raise DeploymentError(f"Flower is not installed, and this command needs it: {_INSTALL}")


def unchecked_flower(installed: str) -> str | None:
    """Why fedstruct does not run on Flower ``installed`` (one line), or ``None`` if its
    release series is one of :data:`CHECKED_FLOWER`."""
    series = ".".join(installed.split(".")[:2])
    if series in CHECKED_FLOWER:
        return None
    known = " and ".join(f"{s}.x" for s in CHECKED_FLOWER)
    return (
        f"Flower {installed} is installed, but fedstruct's Flower adapter "
        f"(fedstruct.fl.flower.adapter) was checked against Flower {known} only: it uses "
        f"Flower internals that change between releases; {_INSTALL}"
    )


def require_checked_flower(installed: str | None = None) -> str:
    """The installed Flower's version (or ``installed``), if this module knows it.

    Raises
    ------
    DeploymentError
        One line, if Flower is not installed or its series is not in
        :data:`CHECKED_FLOWER`.
    """
    installed = flower_version() if installed is None else installed
    reason = unchecked_flower(installed)
    if reason is not None:
        raise DeploymentError(reason)
    return installed


require_checked_flower()

try:
    from flwr.common.constant import (
        ACCESS_TOKEN_KEY,
        ISOLATION_MODE_PROCESS,
        NOOP_ACCOUNT_NAME,
        NOOP_FLWR_AID,
        ErrorCode,
        SubStatus,
    )
except ImportError as missing:  # a broken install of a known series
    raise DeploymentError(
        f"Flower {flower_version()} lacks {missing.name or missing}, which fedstruct "
        f"uses; reinstall it: {_INSTALL}"
    ) from None


# ------------------------------------------------------------- the inventory
@dataclass(frozen=True)
class FlowerSymbol:
    """One Flower internal fedstruct relies on.

    Attributes
    ----------
    module
        The Flower module it lives in.
    attribute
        Its name there (``""``: the module itself).
    needs
        What fedstruct relies on in it: the parameters of a function, the parameters or
        attributes of a class, the members of an enum, the attributes of a module.
    why
        What fedstruct uses it for (docs/deploy.md lists the same).
    """

    module: str
    attribute: str
    needs: tuple[str, ...] = ()
    why: str = ""

    @property
    def name(self) -> str:
        """``module.attribute`` (or the module's name)."""
        return f"{self.module}.{self.attribute}" if self.attribute else self.module

    def load(self) -> Any:
        """The installed Flower's object (imports its module; ``attribute`` may be dotted,
        e.g. a class's method)."""
        found: Any = importlib.import_module(self.module)
        for part in filter(None, self.attribute.split(".")):
            found = getattr(found, part)
        return found

    def problem(self) -> str | None:
        """What the installed Flower lacks of this symbol (one line), or ``None``."""
        try:
            found = self.load()
        except (ImportError, AttributeError) as exc:
            return f"{self.name} is gone ({exc})"
        has: set[str] = set()
        if callable(found):
            try:
                has |= set(inspect.signature(found).parameters)
            except (TypeError, ValueError):  # no signature: a builtin, a protobuf class
                pass
        descriptor = getattr(found, "DESCRIPTOR", None)  # a protobuf message: its fields
        has |= set(getattr(descriptor, "fields_by_name", {}))
        has |= set(getattr(found, "__dataclass_fields__", {}))
        missing = [need for need in self.needs if need not in has and not hasattr(found, need)]
        if missing:
            return f"{self.name} no longer has {', '.join(missing)}"
        return None


_AUTH_TYPING = "flwr.supercore.auth.typing"
_ERROR = "flwr.supercore.error"
_CONTROL_PB2 = "flwr.proto.control_pb2"
_SUPERLINK_CLI = "flwr.superlink.cli.flower_superlink"
_HANDLERS = "flwr.superlink.servicer.control.control_handlers"
_NODE = "flwr.supernode.start_client_internal"

#: Every Flower internal this module wraps (one contract test each).
SYMBOLS: tuple[FlowerSymbol, ...] = (
    # the SuperLink's held polls (wrap_message_polls)
    FlowerSymbol(
        "flwr.superlink.servicer.fleet.fleet_handlers",
        "pull_messages",
        ("request", "state", "store"),
        "a SuperNode's poll for its next message, held by the SuperLink until one is there",
    ),
    FlowerSymbol(
        "flwr.superlink.servicer.runtime.runtime_handlers",
        "pull_messages",
        ("request", "state", "task"),
        "the ServerApp's poll for replies, held by the SuperLink until one is there",
    ),
    *(
        FlowerSymbol(module, push, ("request", "state"), "a push that wakes the held polls")
        for module in (
            "flwr.superlink.servicer.fleet.fleet_handlers",
            "flwr.superlink.servicer.runtime.runtime_handlers",
        )
        for push in ("push_messages", "push_object")
    ),
    FlowerSymbol(
        "flwr.supercore.object_store",
        "ObjectStore",
        ("get",),
        "whether a polled message's objects are all pushed (None, b'' until pushed)",
    ),
    FlowerSymbol(
        "flwr.proto.message_pb2",
        "ObjectTree",
        ("object_id", "children"),
        "the objects of a polled message",
    ),
    FlowerSymbol(
        "flwr.proto.fleet_pb2",
        "PullMessagesResponse",
        ("messages_list", "message_object_trees"),
        "a SuperNode's poll's answer",
    ),
    FlowerSymbol(
        "flwr.proto.runtime_pb2",
        "PullAppMessagesResponse",
        ("messages_list", "message_object_trees"),
        "the ServerApp's poll's answer",
    ),
    # a reply's error codes (grid.py, the SuperNode's guard)
    FlowerSymbol(
        "flwr.common.constant",
        "ErrorCode",
        (
            "NODE_UNAVAILABLE",
            "MESSAGE_UNAVAILABLE",
            "REPLY_MESSAGE_UNAVAILABLE",
            "CLIENT_APP_CRASHED",
            "INVALID_FAB",
            "CLIENT_APP_RAISED_EXCEPTION",
        ),
        "the codes of an error reply Flower made in a node's stead (a dropout), the "
        "'invalid FAB' error a guarded SuperNode answers a foreign app's message with, and "
        "the error a warm worker answers with when its ClientApp raised",
    ),
    # the SuperLink's guard: Control-API authentication
    FlowerSymbol(
        "flwr.common.constant",
        "ACCESS_TOKEN_KEY",
        why="the metadata key under which Flower hands a call's bearer token to the plugin",
    ),
    FlowerSymbol(
        "flwr.common.constant",
        "NOOP_FLWR_AID",
        why="the account id of a call the plugin accepts (open source has one account)",
    ),
    FlowerSymbol(
        "flwr.common.constant",
        "NOOP_ACCOUNT_NAME",
        why="the account name of a call the plugin accepts",
    ),
    FlowerSymbol(
        "flwr.superlink.auth_plugin",
        "ControlAuthnPlugin",
        (
            "validate_tokens_in_metadata",
            "get_login_details",
            "get_auth_tokens",
            "refresh_tokens",
        ),
        "the interface of a Control-API authentication plugin (fedstruct's ControlKeyAuthn)",
    ),
    FlowerSymbol(
        _AUTH_TYPING,
        "AccountInfo",
        ("flwr_aid", "account_name"),
        "the account the plugin hands to a call's handler (fedstruct's BoundAccount)",
    ),
    FlowerSymbol(_AUTH_TYPING, "AccountAuthLoginDetails", why="a type of the plugin interface"),
    FlowerSymbol(_AUTH_TYPING, "AccountAuthCredentials", why="a type of the plugin interface"),
    FlowerSymbol(
        _ERROR,
        "FlowerError",
        ("code", "message", "public_details"),
        "the error a handler raises to refuse a call (its public details reach the caller)",
    ),
    FlowerSymbol(
        _ERROR,
        "FlowerError.from_json",
        ("value",),
        "reads the reason of a call the SuperLink refused (flower_error_reason)",
    ),
    FlowerSymbol(
        _ERROR,
        "ApiErrorCode",
        ("NO_PERMISSIONS", "NO_ACCOUNT_AUTH"),
        "the codes of a refused call",
    ),
    FlowerSymbol(
        _SUPERLINK_CLI,
        "load_control_authn_plugin",
        why="hook: the SuperLink's loader of its Control-API authentication plugin, "
        "replaced by one returning fedstruct's (replace_control_authn_plugin)",
    ),
    FlowerSymbol(
        _HANDLERS,
        "",
        ("start_run", "list_runs", "stop_run", "register_node", "unregister_node"),
        "hook: the Control API's handlers, each bound to the call its token names, "
        "start_run admitting fedstruct's app only (control_handlers, wrap_start_run)",
    ),
    FlowerSymbol(
        _HANDLERS,
        "start_run",
        ("request", "account"),
        "the handler that accepts a run: wrapped to refuse any app but fedstruct's",
    ),
    FlowerSymbol(
        "flwr.superlink.extensions",
        "configure_app",
        ("app",),
        "hook: called by the SuperLink on its HTTP app once Flower's routes are in; "
        "wrapped to add fedstruct's results call to the Control API (add_control_route)",
    ),
    FlowerSymbol(
        "flwr.supercore.protobuf.constants",
        "PROTOBUF_MEDIA_TYPE",
        why="the media type of a protobuf answer on the Control API (add_control_route)",
    ),
    FlowerSymbol(
        "flwr.supercore.protobuf.client",
        "ProtobufClient._unary_unary",
        ("path", "rpc_method", "request", "response_type"),
        "sends one protobuf request to a Control API path, through the client's "
        "interceptors (fedstruct's signature among them), and reads the protobuf answer "
        "(call_control_route)",
    ),
    # the SuperNode's guard
    FlowerSymbol(
        _NODE,
        "_pull_and_store_message",
        ("state", "object_store", "receive", "get_fab"),
        "hook: the SuperNode's pull of one message, where the run's app is fetched "
        "before any of its code runs; wrapped to refuse a foreign app (wrap_message_pull)",
    ),
    FlowerSymbol(
        _NODE,
        "_insert_message",
        ("msg", "state", "store"),
        "stores the node's error reply to a message of a refused app (store_error_reply)",
    ),
    # the SuperNode's warm workers (dispatch.py, worker.py)
    FlowerSymbol(
        "flwr.common.constant",
        "ISOLATION_MODE_PROCESS",
        why="'flower-supernode --isolation process': the node starts no flower-superexec; "
        "fedstruct's dispatcher hands its ClientApp tasks to warm workers",
    ),
    FlowerSymbol(
        "flwr.supercore.runtime",
        "RuntimeHttpClient",
        (
            "from_server_address",
            "AcquireTask",
            "SendTaskHeartbeat",
            "PullTaskInput",
            "PullMessages",
            "PushMessages",
            "PushTaskOutput",
            "close",
        ),
        "the SuperNode's Runtime API client, as flower-superexec and flwr-clientapp use it "
        "(runtime_client)",
    ),
    FlowerSymbol(
        "flwr.supercore.runtime",
        "RuntimeHttpClient.from_server_address",
        ("server_address", "insecure", "root_certificates", "interceptors", "retry_invoker"),
        "connects to the node's Runtime API on its own machine (runtime_client)",
    ),
    FlowerSymbol(
        "flwr.supercore.interceptors",
        "RuntimeTokenHttpInterceptor",
        ("token",),
        "sends a task's token with each Runtime API call of that task (runtime_client)",
    ),
    FlowerSymbol(
        "flwr.supercore.retry",
        "make_simple_http_retry_invoker",
        why="retries a task's Runtime API calls as flwr-clientapp does (runtime_client)",
    ),
    FlowerSymbol(
        "flwr.proto.runtime_pb2",
        "AcquireTaskRequest",
        ("supported_task_types",),
        "asks the node for a ClientApp task to run (acquire_clientapp_task)",
    ),
    FlowerSymbol(
        "flwr.proto.runtime_pb2",
        "AcquireTaskResponse",
        ("task", "token"),
        "a task (its run id) and the token that gives its input (acquire_clientapp_task)",
    ),
    FlowerSymbol(
        "flwr.supercore.constant",
        "TaskType",
        ("CLIENT_APP", "SERVER_APP"),
        "the kind of task a warm worker answers or a warm ServerApp runs "
        "(acquire_clientapp_task, acquire_serverapp_task)",
    ),
    FlowerSymbol(
        "flwr.supercore.heartbeat",
        "HeartbeatSender",
        ("heartbeat_fn", "start", "stop", "is_running"),
        "keeps a task alive at the node while it is answered (answer_clientapp_task)",
    ),
    FlowerSymbol(
        "flwr.supercore.heartbeat",
        "make_task_heartbeat_fn_http",
        ("client",),
        "the task's heartbeat over the Runtime API (answer_clientapp_task)",
    ),
    FlowerSymbol(
        "flwr.supernode.runtime.run_clientapp",
        "pull_task_input",
        ("client",),
        "a task's message, context, run and app bundle, as flwr-clientapp pulls them "
        "(answer_clientapp_task)",
    ),
    FlowerSymbol(
        "flwr.supernode.runtime.run_clientapp",
        "push_message",
        ("client", "message", "context"),
        "sends a task's reply to the node (answer_clientapp_task)",
    ),
    FlowerSymbol(
        "flwr.supernode.runtime.run_clientapp",
        "push_task_output",
        ("client", "context", "sub_status", "details"),
        "ends a task with its context (the node's state for the run) and status "
        "(answer_clientapp_task)",
    ),
    FlowerSymbol(
        "flwr.common.constant",
        "SubStatus",
        ("COMPLETED", "FAILED"),
        "how a task ended (answer_clientapp_task)",
    ),
    # the SuperLink's warm ServerApp (dispatch.py, serverapp_worker.py)
    FlowerSymbol(
        "flwr.supercore.interceptors",
        "SuperExecAuthHttpInterceptor",
        ("master_secret", "protected_methods"),
        "signs the SuperLink dispatcher's asks for a ServerApp task with the SuperLink's "
        "SuperExec secret (runtime_client)",
    ),
    FlowerSymbol(
        "flwr.supercore.address",
        "resolve_bind_address",
        ("address",),
        "where the SuperLink's own Runtime API is reached from its machine, as Flower's "
        "SuperExec reaches it (superlink_runtime_address)",
    ),
    FlowerSymbol(
        "flwr.superlink.grid",
        "HttpGrid",
        ("runtime_api_address", "insecure", "root_certificates", "token"),
        "the grid a ServerApp task runs with, as flwr-serverapp builds it (run_serverapp_task)",
    ),
    FlowerSymbol(
        "flwr.superlink.grid",
        "HttpGrid.set_run",
        ("run",),
        "tells the grid its run (run_serverapp_task)",
    ),
    FlowerSymbol(
        "flwr.superlink.grid",
        "HttpGrid.close",
        why="closes the grid's connection when the task ends (run_serverapp_task)",
    ),
    FlowerSymbol(
        "flwr.proto.runtime_pb2",
        "PullTaskInputResponse",
        ("task_id", "run", "context", "fab"),
        "a ServerApp task's run, context and app bundle (run_serverapp_task)",
    ),
    FlowerSymbol(
        "flwr.proto.runtime_pb2",
        "PushTaskOutputRequest",
        ("context", "sub_status", "details"),
        "ends a ServerApp task with its status (run_serverapp_task)",
    ),
    FlowerSymbol(
        "flwr.common.serde",
        "context_from_proto",
        why="a ServerApp task's context (run_serverapp_task)",
    ),
    FlowerSymbol(
        "flwr.common.serde",
        "context_to_proto",
        why="a ServerApp task's context, pushed back (run_serverapp_task)",
    ),
    FlowerSymbol(
        "flwr.common.serde",
        "run_from_proto",
        why="a ServerApp task's run (run_serverapp_task)",
    ),
    FlowerSymbol(
        "flwr.common.serde",
        "fab_from_proto",
        why="a ServerApp task's app bundle, checked before anything runs (run_serverapp_task)",
    ),
    FlowerSymbol(
        "flwr.common.config",
        "get_fused_config_from_fab",
        ("fab_file", "run"),
        "a ServerApp task's run config from its bundle, without installing it (run_serverapp_task)",
    ),
    FlowerSymbol(
        "flwr.server.run_serverapp",
        "run",
        ("grid", "context", "server_app_dir", "loaded_server_app"),
        "runs the ServerApp with its grid as flwr-serverapp does (run_serverapp_task)",
    ),
    FlowerSymbol(
        "flwr.supercore.task_identity",
        "TaskIdentity",
        ("_task_id", "_run_id", "_node_id"),
        "the task this process runs, which Flower's ServerApp side reads: set as "
        "flwr-serverapp sets it (run_serverapp_task)",
    ),
    FlowerSymbol(
        "flwr.supercore.logger",
        "mirror_output_to_queue",
        ("log_queue",),
        "the ServerApp's output, uploaded to the SuperLink as flwr-serverapp's "
        "(run_serverapp_task)",
    ),
    FlowerSymbol(
        "flwr.supercore.logger",
        "restore_output",
        why="ends that mirror (run_serverapp_task)",
    ),
    FlowerSymbol(
        "flwr.proto.runtime_pb2",
        "PullTaskInputRequest",
        why="asks for a ServerApp task's input (run_serverapp_task)",
    ),
    FlowerSymbol(
        "flwr.supercore.logger",
        "start_log_uploader",
        ("log_queue", "node_id", "run_id", "client"),
        "uploads the ServerApp's output for 'flwr log' (run_serverapp_task)",
    ),
    FlowerSymbol(
        "flwr.supercore.logger",
        "stop_log_uploader",
        ("log_queue", "log_uploader"),
        "uploads what is left of it before the task ends, with no wait after (run_serverapp_task)",
    ),
    FlowerSymbol(
        "flwr.supercore.app_utils",
        "start_parent_process_monitor",
        ("parent_pid",),
        "a warm ServerApp ends with its SuperLink (serverapp_worker.py)",
    ),
    FlowerSymbol(
        "flwr.superlink.cli",
        "flower_superlink",
        why="the flower-superlink command, run in the guard's process (run_superlink)",
    ),
    FlowerSymbol(
        "flwr.supernode.cli",
        "flower_supernode",
        why="the flower-supernode command, run in the guard's process (run_supernode)",
    ),
    # Control API calls (control.py)
    FlowerSymbol(
        "flwr.supercore.control",
        "ControlHttpClient",
        (
            "from_server_address",
            "StartRun",
            "RegisterNode",
            "UnregisterNode",
            "ListRuns",
            "close",
        ),
        "the flwr CLI's Control API client over HTTP (control_client)",
    ),
    FlowerSymbol(
        "flwr.supercore.control",
        "ControlHttpClient.from_server_address",
        ("server_address", "insecure", "root_certificates", "interceptors"),
        "connects the client to a SuperLink, over TLS or not, with fedstruct's interceptor",
    ),
    FlowerSymbol(
        "flwr.supercore.protobuf.client",
        "ProtobufRequestContext",
        ("message", "request"),
        "what the client hands an interceptor: fedstruct signs the request's protobuf "
        "message into the HTTP request's Authorization header (control.SignedCalls)",
    ),
    FlowerSymbol(
        "flwr.cli.cli_client_interceptor",
        "CliClientHttpInterceptor",
        ("intercept",),
        "marks fedstruct's calls as the flwr CLI's, as the SuperLink expects",
    ),
    FlowerSymbol(
        "flwr.supercore.interceptors",
        "RuntimeVersionHttpInterceptor",
        ("component_name", "intercept"),
        "sends the client's Flower version, which the SuperLink checks",
    ),
    FlowerSymbol(
        "flwr.cli.build",
        "build_fab_from_disk",
        ("app",),
        "bundles fedstruct's generated app folder as 'flwr run' would (app_bundle)",
    ),
    FlowerSymbol(
        "flwr.common.serde",
        "fab_to_proto",
        ("fab",),
        "a bundle in a run request (start_run_request)",
    ),
    FlowerSymbol(
        "flwr.common.serde",
        "user_config_to_proto",
        ("user_config",),
        "a run's config overrides in a run request (start_run_request)",
    ),
    FlowerSymbol(
        "flwr.supercore.fab",
        "Fab",
        ("hash_str", "content", "verifications"),
        "a bundle with its hash (start_run_request)",
    ),
    FlowerSymbol(
        "flwr.supercore.primitives.asymmetric",
        "public_key_to_bytes",
        ("public_key",),
        "a SuperNode's public key as the SuperLink stores it (register_node_request)",
    ),
    FlowerSymbol(
        _CONTROL_PB2,
        "StartRunRequest",
        ("fab", "override_config", "app_spec"),
        "submit a run (the SuperLink's guard reads fab and app_spec)",
    ),
    FlowerSymbol(
        _CONTROL_PB2, "RegisterNodeRequest", ("public_key",), "register a SuperNode's key"
    ),
    FlowerSymbol(_CONTROL_PB2, "UnregisterNodeRequest", ("node_id",), "unregister a SuperNode"),
    FlowerSymbol(_CONTROL_PB2, "ListRunsRequest", ("run_id",), "a run's status"),
    # flower-sim (simulation.py)
    FlowerSymbol(
        "flwr.server.superlink.fleet.vce.backend.raybackend",
        "RayBackend",
        ("backend_config",),
        "starts Ray as Flower's simulation would, before it, so that fedstruct can take "
        "SIGTERM back and check Ray's workers start (start_ray_backend)",
    ),
)

# --------------------------------------------------- classes, imported when read
#: The classes fedstruct subclasses or raises, by name: imported when first read.
_CLASSES = {
    "AccountAuthCredentials": _AUTH_TYPING,
    "AccountAuthLoginDetails": _AUTH_TYPING,
    "AccountInfo": _AUTH_TYPING,
    "ApiErrorCode": _ERROR,
    "ControlAuthnPlugin": "flwr.superlink.auth_plugin",
    "ControlHttpClient": "flwr.supercore.control",
    "FlowerError": _ERROR,
}


def __getattr__(name: str) -> Any:
    """A class of :data:`_CLASSES`, imported on first read (PEP 562) and kept here."""
    if name not in _CLASSES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_CLASSES[name]), name)
    globals()[name] = value
    return value


# ----------------------------------------------------------- error codes
#: Codes of an error reply Flower makes when a node's answer is lost: a dropout.
LOST_REPLY_CODES = frozenset(
    {
        ErrorCode.NODE_UNAVAILABLE,
        ErrorCode.MESSAGE_UNAVAILABLE,
        ErrorCode.REPLY_MESSAGE_UNAVAILABLE,
        ErrorCode.CLIENT_APP_CRASHED,
    }
)
#: Code of Flower's "invalid FAB" error: the reply a SuperNode makes to a message of an
#: app it will not run.
INVALID_APP_CODE: int = ErrorCode.INVALID_FAB
#: Flower's (account id, account name) of a call on open-source Flower, which has no
#: accounts: the account fedstruct's plugin hands to a call it accepts.
NO_ACCOUNT = (NOOP_FLWR_AID, NOOP_ACCOUNT_NAME)


# ------------------------------------------------------------ the SuperLink
def replace_control_authn_plugin(plugin: ControlAuthnPlugin) -> None:
    """Make the SuperLink started later in this process (:func:`run_superlink`)
    authenticate every Control API call with ``plugin``.

    Wraps ``flwr.superlink.cli.flower_superlink.load_control_authn_plugin``, which the
    SuperLink calls at start for its plugin (open-source Flower: one that accepts every
    caller; only the enterprise edition ships another). It is looked up by name when the
    SuperLink starts, so replacing the module's attribute is enough (contract test).
    """
    # by module path: the package ``flwr.superlink.cli`` exports a function of that name
    module: Any = importlib.import_module(_SUPERLINK_CLI)
    module.load_control_authn_plugin = lambda: plugin


def control_handlers() -> ModuleType:
    """Flower's module of Control API handlers
    (``flwr.superlink.servicer.control.control_handlers``).

    Every call an account makes (submit, list or stop runs, register nodes...) is
    answered by a function of this module taking ``request, account`` first; Flower's
    gRPC servicer and HTTP router both call it by module attribute, so a function set on
    the module answers the call on either transport (contract test).
    """
    return importlib.import_module(_HANDLERS)


def add_control_route(path: str, endpoint: Callable[..., Any]) -> None:
    """Make the SuperLink started later in this process (:func:`run_superlink`) answer
    ``POST path`` (under ``/v1/control/``) with ``endpoint``, a FastAPI endpoint taking
    the ``starlette`` request.

    Wraps ``flwr.superlink.extensions.configure_app``, which the SuperLink calls (by
    module attribute) on its HTTP app once Flower's own routes are in. A path under
    ``/v1/control/`` is authenticated like every Control API call before ``endpoint``
    runs (Flower's ``ControlAuthenticationMiddleware`` sets ``request.state.account``;
    a refused token never reaches it), and a ``FlowerError`` it raises is answered as
    Flower answers a refused call (contract tests).
    """
    extensions: Any = importlib.import_module("flwr.superlink.extensions")
    configure = extensions.configure_app

    def configure_with_fedstruct_route(app: Any) -> None:
        configure(app)
        app.add_api_route(path, endpoint, methods=["POST"], include_in_schema=False)

    extensions.configure_app = configure_with_fedstruct_route


def protobuf_media_type() -> str:
    """The media type of a protobuf answer on Flower's Control API."""
    from flwr.supercore.protobuf.constants import PROTOBUF_MEDIA_TYPE

    return PROTOBUF_MEDIA_TYPE


def wrap_start_run(wrap: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """Replace the Control API's ``start_run(request, account, ...)`` handler (which
    accepts a run: ``request`` is a ``StartRunRequest``) with ``wrap(start_run)``."""
    handlers: Any = control_handlers()
    handlers.start_run = wrap(handlers.start_run)


#: The SuperLink's handlers of the messages it carries: the SuperNodes' Fleet API and the
#: ServerApp's Runtime API. Each has ``pull_messages`` (a poll: a node's for its next
#: message, ``(request, state, store)``; the ServerApp's for replies, ``(request, state,
#: task)``), ``push_messages`` and ``push_object``, which both transports call by module
#: attribute (contract test).
MESSAGE_HANDLERS = (
    "flwr.superlink.servicer.fleet.fleet_handlers",
    "flwr.superlink.servicer.runtime.runtime_handlers",
)


def wrap_message_polls(
    hold: Callable[[Callable[[], Any], Callable[[Any], bool], Callable[[Any], bool]], Any],
    pushed: Callable[[], None],
) -> None:
    """Make the SuperLink answer every poll for messages (``pull_messages`` of
    :data:`MESSAGE_HANDLERS`) with ``hold(pull, found, ready)``, and call ``pushed()``
    after every push of messages or of an object to either API.

    ``pull()`` polls once, as Flower does (a message it finds is delivered: no later
    poll finds it); ``found(answer)`` tells whether the answer holds messages, and
    ``ready(answer)`` whether every object of its messages is in the SuperLink's object
    store: a message can be polled as soon as it is pushed, its objects are pushed
    after it, and a receiver that asks for an object not there yet waits a second
    before it asks again (``flwr.supercore.constant.PULL_INITIAL_BACKOFF``).
    """
    for name in MESSAGE_HANDLERS:
        handlers: Any = importlib.import_module(name)
        handlers.pull_messages = _held_pull(handlers.pull_messages, hold)
        for push in ("push_messages", "push_object"):
            setattr(handlers, push, _announced(getattr(handlers, push), pushed))


def _held_pull(pull: Callable[..., Any], hold: Callable[..., Any]) -> Callable[..., Any]:
    signature = inspect.signature(pull)

    @functools.wraps(pull)
    def pull_messages_held(*args: Any, **kwargs: Any) -> Any:
        given = signature.bind(*args, **kwargs).arguments
        store = given["store"] if "store" in given else given["state"].object_store
        return hold(
            lambda: pull(*args, **kwargs),
            lambda answer: len(answer.messages_list) > 0,
            lambda answer: _objects_in(store, answer.message_object_trees),
        )

    return pull_messages_held


def _announced(push: Callable[..., Any], pushed: Callable[[], None]) -> Callable[..., Any]:
    @functools.wraps(push)
    def push_and_announce(*args: Any, **kwargs: Any) -> Any:
        try:
            return push(*args, **kwargs)
        finally:
            pushed()

    return push_and_announce


def _objects_in(store: Any, trees: Sequence[Any]) -> bool:
    """Whether every object of the object ``trees`` (Flower's ``ObjectTree``) has its
    content in ``store`` (Flower's ``ObjectStore.get``: ``None`` for an unknown object,
    ``b""`` for one registered but not yet pushed)."""
    waiting = list(trees)
    while waiting:
        tree = waiting.pop()
        if not store.get(tree.object_id):
            return False
        waiting.extend(tree.children)
    return True


def run_superlink() -> None:
    """Run Flower's ``flower-superlink`` command (``flwr.superlink.cli.flower_superlink``)
    in this process, with this process's ``sys.argv``."""
    from flwr.superlink.cli import flower_superlink

    flower_superlink()


# ------------------------------------------------------------- the SuperNode
#: Seconds Flower's SuperNode waits after a pull that brought no message
#: (``time.sleep(3)`` in ``start_client_internal``; contract test).
FLOWER_POLL_WAIT = 3.0


def wrap_message_pull(
    wrap: Callable[[Callable[..., int | None]], Callable[..., int | None]],
) -> None:
    """Replace the SuperNode's pull of one message with ``wrap(pull)``.

    Wraps ``flwr.supernode.start_client_internal._pull_and_store_message``, which the
    SuperNode's loop calls (by name, with keyword arguments only) to pull the next message
    from the SuperLink and store it; it returns the message's run id, or ``None`` when
    there was none (the loop then sleeps :data:`FLOWER_POLL_WAIT` seconds). Of its
    keyword arguments fedstruct uses ``receive()`` (the next ``(message, object tree)``
    or ``None``), ``get_fab(fab_hash, run_id)`` (a run's app bundle, fetched before any
    of its code runs; ``.content`` its bytes), ``state`` and ``object_store`` (for
    :func:`store_error_reply`).
    """
    node: Any = importlib.import_module(_NODE)
    node._pull_and_store_message = wrap(node._pull_and_store_message)


def store_error_reply(message: Any, reason: str, state: Any, object_store: Any) -> None:
    """Store the SuperNode's reply to ``message``: Flower's "invalid FAB" error with
    ``reason``, which the node sends to the SuperLink as it would any reply.

    Wraps ``flwr.supernode.start_client_internal._insert_message`` (how Flower stores
    the reply of an app it refuses to verify); ``state`` and ``object_store`` are the
    pull's (:func:`wrap_message_pull`).
    """
    from flwr.app import Error, Message

    node = importlib.import_module(_NODE)
    node._insert_message(
        Message(Error(INVALID_APP_CODE, reason), reply_to=message), state, object_store
    )


def run_supernode() -> None:
    """Run Flower's ``flower-supernode`` command (``flwr.supernode.cli.flower_supernode``)
    in this process, with this process's ``sys.argv``."""
    from flwr.supernode.cli import flower_supernode

    flower_supernode()


# ------------------------------------------------ the SuperNode's warm workers
#: The ``flower-supernode --isolation`` mode in which the node starts no
#: ``flower-superexec``: another process acquires its ClientApp tasks (fedstruct's
#: dispatcher, :mod:`fedstruct.fl.flower.dispatch`).
CLIENTAPP_ISOLATION: str = ISOLATION_MODE_PROCESS


def runtime_client(
    address: str,
    component: str,
    token: str | None = None,
    *,
    root_certificates: bytes | None = None,
    auth_secret: bytes | None = None,
) -> Any:
    """Flower's client of a Runtime API (``flwr.supercore.runtime.RuntimeHttpClient``) at
    ``address``: a SuperNode's (plain HTTP on the node's own machine, as ``fedstruct
    flower supernode`` serves it) or the SuperLink's (over TLS with the CA certificate
    ``root_certificates``, unless ``None``). It sends ``component`` as its Flower
    component (the server checks its version); for a task, the task's ``token`` with
    every call, whose calls are then retried as ``flwr-clientapp`` retries them; with
    ``auth_secret``, its asks for a task signed as Flower's SuperExec signs them
    (:data:`SUPEREXEC_AUTH_METHODS`).
    """
    from flwr.supercore.interceptors import (
        RuntimeTokenHttpInterceptor,
        RuntimeVersionHttpInterceptor,
        SuperExecAuthHttpInterceptor,
    )
    from flwr.supercore.retry import make_simple_http_retry_invoker
    from flwr.supercore.runtime import RuntimeHttpClient

    interceptors: list[Any] = [RuntimeVersionHttpInterceptor(component_name=component)]
    if token is not None:
        interceptors.append(RuntimeTokenHttpInterceptor(token))
    if auth_secret is not None:
        interceptors.append(
            SuperExecAuthHttpInterceptor(
                master_secret=auth_secret, protected_methods=SUPEREXEC_AUTH_METHODS
            )
        )
    return RuntimeHttpClient.from_server_address(
        server_address=address,
        insecure=root_certificates is None,
        root_certificates=root_certificates,
        interceptors=interceptors,
        retry_invoker=None if token is None else make_simple_http_retry_invoker(),
    )


def load_clientapp_runtime() -> None:
    """Import what :func:`answer_clientapp_task` uses of Flower, so that a worker's
    first task does not wait for it."""
    for module in (
        "flwr.supercore.interceptors",
        "flwr.supercore.retry",
        "flwr.supercore.runtime",
        "flwr.supercore.heartbeat",
        "flwr.supernode.runtime.run_clientapp",
    ):
        importlib.import_module(module)


def acquire_clientapp_task(client: Any) -> tuple[str, int] | None:
    """The token and run id of a ClientApp task the node behind ``client``
    (:func:`runtime_client`) has for this caller, or ``None`` if it has none: what
    ``flower-superexec`` asks before it starts a ``flwr-clientapp`` process."""
    from flwr.supercore.constant import TaskType

    return _acquire_task(client, TaskType.CLIENT_APP)


def acquire_serverapp_task(client: Any) -> tuple[str, int] | None:
    """The token and run id of a ServerApp task (a run to start) the SuperLink behind
    ``client`` (:func:`runtime_client`, signed with the SuperLink's SuperExec secret)
    has, or ``None``: what the SuperLink's ``flower-superexec`` asks before it starts
    a ``flwr-serverapp`` process."""
    from flwr.supercore.constant import TaskType

    return _acquire_task(client, TaskType.SERVER_APP)


def _acquire_task(client: Any, kind: Any) -> tuple[str, int] | None:
    from flwr.proto.runtime_pb2 import AcquireTaskRequest

    answer = client.AcquireTask(AcquireTaskRequest(supported_task_types=[kind]))
    if not answer.HasField("task") or not answer.token:
        return None
    return str(answer.token), int(answer.task.run_id)


def answer_clientapp_task(
    address: str,
    token: str,
    app: Callable[[Any, Any], Any],
    check: Callable[[bytes], str | None],
) -> None:
    """Answer the ClientApp task of ``token`` at the SuperNode's Runtime API at
    ``address`` as ``flwr-clientapp`` answers it
    (``flwr.supernode.runtime.run_clientapp.run_clientapp``), in this process, which
    may answer many: keep the task alive (heartbeat), pull its message, context and
    app bundle, reply with ``app(message, context)``, push the reply and the context
    (the node's state for the run) with the task's status.

    Unlike ``flwr-clientapp`` it neither installs the bundle nor loads an app from it:
    ``app`` is the caller's, and a bundle for which ``check(bundle bytes)`` gives a
    reason is answered with Flower's "invalid FAB" error and that reason. An exception
    of ``app`` is answered with Flower's ClientApp error, as ``flwr-clientapp``
    answers it, and the task fails; this function raises only what ``KeyboardInterrupt``
    and the like raise.
    """
    from flwr.app import Error, Message
    from flwr.supercore.heartbeat import HeartbeatSender, make_task_heartbeat_fn_http
    from flwr.supernode.runtime.run_clientapp import (
        pull_task_input,
        push_message,
        push_task_output,
    )

    client = runtime_client(address, "flwr-clientapp", token)
    heartbeat = HeartbeatSender(make_task_heartbeat_fn_http(client))
    context, reply = None, None
    status, details = SubStatus.FAILED, "ClientApp task failed due to unknown reason"
    try:
        heartbeat.start()
        message, context, _, fab = pull_task_input(client)
        reason = check(bytes(fab.content))
        if reason is not None:
            reply = Message(Error(INVALID_APP_CODE, reason), reply_to=message)
            details = reason
        else:
            try:
                reply = app(message, context)
                status, details = SubStatus.COMPLETED, ""
            except Exception as exc:  # answered as flwr-clientapp answers it
                details = f"{type(exc)}:<'{exc}'>"
                code = ErrorCode.CLIENT_APP_RAISED_EXCEPTION
                reply = Message(Error(code, details), reply_to=message)
        try:
            push_message(client, reply, context)
        except Exception as exc:
            status, details = SubStatus.FAILED, f"the reply was not pushed: {exc}"
            raise
    finally:
        push_task_output(client=client, context=context, sub_status=status, details=details)
        if heartbeat.is_running:
            heartbeat.stop()
        client.close()


# ------------------------------------------------ the SuperLink's warm ServerApp
#: The Runtime API calls Flower's SuperExec signs with its secret, and which a
#: SuperLink given a secret refuses unsigned: the ask for a task (whose token opens a
#: run's ServerApp side).
SUPEREXEC_AUTH_METHODS = frozenset({"/flwr.proto.Runtime/AcquireTask"})
#: ``flower-superlink``'s flag naming its SuperExec secret file (process isolation only).
SUPEREXEC_SECRET_FLAG = "--superexec-auth-secret-file"


def superlink_runtime_address(host: str, port: int) -> str:
    """Where the SuperLink bound to ``host:port`` serves its Runtime API to a process on
    its own machine (a bind-all host becomes the loopback one), as Flower's SuperLink
    tells its own SuperExec."""
    from flwr.supercore.address import resolve_bind_address

    shown = f"[{host}]" if ":" in host else host
    return str(resolve_bind_address(f"{shown}:{port}"))


def load_serverapp_runtime() -> None:
    """Import what :func:`run_serverapp_task` uses of Flower, so that a warm ServerApp's
    run does not wait for it."""
    for module in (
        "flwr.common.config",
        "flwr.common.serde",
        "flwr.server.run_serverapp",
        "flwr.supercore.app_utils",
        "flwr.supercore.heartbeat",
        "flwr.supercore.logger",
        "flwr.supercore.task_identity",
        "flwr.superlink.grid",
    ):
        importlib.import_module(module)


def start_parent_monitor(parent_pid: int) -> None:
    """End this process when process ``parent_pid`` ends (Flower's monitor, as a
    ``flwr-serverapp`` started by the SuperLink's SuperExec has it)."""
    from flwr.supercore.app_utils import start_parent_process_monitor

    start_parent_process_monitor(parent_pid)


def run_serverapp_task(
    address: str,
    token: str,
    app: Any,
    check: Callable[[bytes], str | None],
    *,
    root_certificates: bytes | None = None,
) -> bool:
    """Run the ServerApp task of ``token`` at the SuperLink's Runtime API at ``address``
    as ``flwr-serverapp`` runs it (``flwr.superlink.runtime.run_serverapp.
    run_serverapp``), in this process: keep the task alive (heartbeat), pull its run,
    context and app bundle, upload the process's output as the run's log, run ``app``
    (a ``ServerApp``) with the run's grid and run config, and end the task with its
    status. Whether the ServerApp completed.

    Unlike ``flwr-serverapp`` it neither installs the bundle nor loads an app from it:
    ``app`` is the caller's, and a bundle for which ``check(bundle bytes)`` gives a
    reason fails the task with that reason before anything runs. The run's log is
    uploaded whole before the task ends, without ``flwr-serverapp``'s second of wait
    after it (``flush_logs``), and the process is not ended here.
    """
    from logging import ERROR
    from queue import Queue

    from flwr.app import RecordDict
    from flwr.common import log
    from flwr.common.config import get_fused_config_from_fab
    from flwr.common.serde import (
        context_from_proto,
        context_to_proto,
        fab_from_proto,
        run_from_proto,
    )
    from flwr.proto.runtime_pb2 import PullTaskInputRequest, PushTaskOutputRequest
    from flwr.server.run_serverapp import run as run_app
    from flwr.supercore.heartbeat import HeartbeatSender, make_task_heartbeat_fn_http
    from flwr.supercore.logger import (
        mirror_output_to_queue,
        restore_output,
        start_log_uploader,
        stop_log_uploader,
    )
    from flwr.supercore.task_identity import TaskIdentity
    from flwr.superlink.grid import HttpGrid

    grid = HttpGrid(
        runtime_api_address=address,
        insecure=root_certificates is None,
        root_certificates=root_certificates,
        token=token,
    )
    client = runtime_client(address, "flwr-serverapp", token, root_certificates=root_certificates)
    logs: Queue[str | None] = Queue()
    uploader = None
    heartbeat = HeartbeatSender(make_task_heartbeat_fn_http(client))
    context = None
    status, details = SubStatus.FAILED, "Task failed with unknown error."
    mirror_output_to_queue(logs)
    try:
        heartbeat.start()
        task = client.PullTaskInput(PullTaskInputRequest())
        TaskIdentity.task_id = task.task_id
        TaskIdentity.run_id = task.run.run_id
        TaskIdentity.node_id = task.context.node_id
        context = context_from_proto(task.context)
        run = run_from_proto(task.run)
        fab = fab_from_proto(task.fab)
        grid.set_run(run)
        uploader = start_log_uploader(log_queue=logs, node_id=0, run_id=run.run_id, client=client)
        reason = check(bytes(fab.content))
        if reason is not None:
            details = f"ServerApp refused: {reason}"
        else:
            context.run_config = get_fused_config_from_fab(fab.content, run)
            context = run_app(grid=grid, context=context, server_app_dir="", loaded_server_app=app)
            context.state = RecordDict()  # as flwr-serverapp: no state pushed back
            status, details = SubStatus.COMPLETED, ""
    except Exception as exc:  # answered as flwr-serverapp answers it
        log(ERROR, "ServerApp raised an exception", exc_info=exc)
        details = f"ServerApp failed with exception: {exc}"
    finally:
        if uploader is not None:
            stop_log_uploader(logs, uploader)  # every line up before the task ends
        restore_output()
        try:
            client.PushTaskOutput(
                PushTaskOutputRequest(
                    context=context_to_proto(context) if context is not None else None,
                    sub_status=status,
                    details=details,
                )
            )
        except Exception as exc:  # the SuperLink gone: nothing left to tell it
            log(ERROR, "Failed to push task output: %s", exc)
        if heartbeat.is_running:
            heartbeat.stop()
        grid.close()
        client.close()
    return status == SubStatus.COMPLETED


# ---------------------------------------------------------- Control API calls
def control_client(
    address: str,
    root_certificates: bytes | None,
    interceptors: Sequence[Any] = (),
) -> ControlHttpClient:
    """The ``flwr`` CLI's Control API client (``flwr.supercore.control.ControlHttpClient``)
    for the SuperLink at ``address``: TLS trusting ``root_certificates`` (PEM bytes;
    ``None``: plain text).

    It sends the CLI's own headers (``CliClientHttpInterceptor``, and
    ``RuntimeVersionHttpInterceptor``: the Flower version, which the SuperLink checks),
    then ``interceptors``: objects with ``intercept(context, call_next)``, where
    ``context.message`` is the request's protobuf message and ``context.request`` its
    HTTP request (``httpx.Request``), and which return ``call_next(context)``. Its
    methods ``StartRun``, ``RegisterNode``, ``UnregisterNode`` and ``ListRuns`` send one
    request each; ``close()`` ends it.
    """
    from flwr.cli.cli_client_interceptor import CliClientHttpInterceptor
    from flwr.supercore.control import ControlHttpClient
    from flwr.supercore.interceptors import RuntimeVersionHttpInterceptor

    return ControlHttpClient.from_server_address(
        server_address=address,
        insecure=root_certificates is None,
        root_certificates=root_certificates,
        interceptors=[
            CliClientHttpInterceptor(),
            RuntimeVersionHttpInterceptor(component_name="flwr CLI"),
            *interceptors,
        ],
    )


def call_control_route(client: ControlHttpClient, path: str, request: Any, answer: type) -> Any:
    """Send ``request`` (a protobuf message) to the Control API's ``path`` through
    ``client`` (:func:`control_client`: its interceptors sign it) and read the answer
    as an ``answer`` message (``flwr.supercore.protobuf.client.ProtobufClient.
    _unary_unary``, which every call of the client makes). A refusal raises
    ``httpx.HTTPStatusError`` with Flower's error in its body, as for Flower's calls."""
    rpc_method = f"/fedstruct.Control/{path.rstrip('/').rpartition('/')[2]}"
    return client._unary_unary(
        path=path, rpc_method=rpc_method, request=request, response_type=answer
    )


def flower_error_reason(text: str) -> str | None:
    """The reason a SuperLink gave in the body ``text`` of a refused HTTP call (a
    ``FlowerError`` as JSON: its public details, else its message), or ``None`` if the
    body is not one."""
    from flwr.supercore.error import FlowerError

    error = FlowerError.from_json(text)
    if error is None:
        return None
    return error.public_details or error.message


def app_bundle(folder: Any) -> bytes:
    """The Flower App Bundle (FAB, a zip) of the app in ``folder``, as ``flwr run``
    builds it (``flwr.cli.build.build_fab_from_disk``)."""
    from flwr.cli.build import build_fab_from_disk

    return build_fab_from_disk(folder)


def start_run_request(
    fab: bytes, config: Mapping[str, bool | int | float | str]
) -> StartRunRequest:
    """The Control API's request to run the app bundle ``fab`` with its run config
    overridden by ``config``."""
    from flwr.common.serde import fab_to_proto, user_config_to_proto
    from flwr.proto.control_pb2 import StartRunRequest
    from flwr.supercore.fab import Fab

    return StartRunRequest(
        fab=fab_to_proto(Fab(hashlib.sha256(fab).hexdigest(), fab, {})),
        override_config=user_config_to_proto(dict(config)),
    )


def register_node_request(public_key: Any) -> RegisterNodeRequest:
    """The Control API's request to register a SuperNode's ``public_key`` (a loaded
    ``cryptography`` public key), in the byte form the SuperLink stores."""
    from flwr.proto.control_pb2 import RegisterNodeRequest
    from flwr.supercore.primitives.asymmetric import public_key_to_bytes

    return RegisterNodeRequest(public_key=public_key_to_bytes(public_key))


def unregister_node_request(node_id: int) -> UnregisterNodeRequest:
    """The Control API's request to unregister SuperNode ``node_id``."""
    from flwr.proto.control_pb2 import UnregisterNodeRequest

    return UnregisterNodeRequest(node_id=int(node_id))


def list_runs_request(run_id: int) -> ListRunsRequest:
    """The Control API's request for run ``run_id`` (its answer's ``run_dict`` maps the
    run id to its status)."""
    from flwr.proto.control_pb2 import ListRunsRequest

    return ListRunsRequest(run_id=int(run_id))


# ---------------------------------------------------------------- flower-sim
def start_ray_backend(backend_config: dict[str, Any]) -> None:
    """Start Ray as Flower's simulation would: its own Ray backend
    (``flwr.server.superlink.fleet.vce.backend.raybackend.RayBackend``), which calls
    ``ray.init`` with ``backend_config["init_args"]``. Ray's own errors pass through."""
    from flwr.server.superlink.fleet.vce.backend.raybackend import RayBackend

    RayBackend(backend_config)
