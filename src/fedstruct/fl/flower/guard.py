"""fedstruct's guards inside Flower's SuperLink and SuperNode processes (Flower 1.41, 1.42).

Open-source Flower (1.41, 1.42) authenticates SuperNodes (registered node keys) but not the
callers of the SuperLink's Control API, which shares the SuperLink's one port with the
SuperNodes: its account authentication needs an OIDC plugin shipped only with Flower's
enterprise edition, and a SuperNode's app verification (``--trusted-entities``)
accepts only apps fetched from Flower Hub with Hub's signatures. Without more, anyone
who can reach the port and holds the public ``ca.crt`` may submit any Flower App, whose
own Python code then runs on the SuperLink's machine and on every SuperNode.

``fedstruct flower superlink`` and ``fedstruct flower supernode`` therefore start
Flower's own daemons through this module (``python -m fedstruct.fl.flower.guard
flower-superlink ARGS``), which adds, in the same process and before Flower starts:

- **SuperLink, Control API**: every call (submit, list, stop, register a node...)
  must carry a control token signed by one of the public keys in the file named by
  :data:`CONTROL_KEYS_ENV` (:class:`ControlKeyAuthn`, a Flower Control-API
  authentication plugin; see :func:`~fedstruct.fl.flower.credentials.control_token`).
  A token is accepted once (its nonce is remembered until it expires) and for the
  one call it names, with the arguments it names (:func:`bind_control_handlers`):
  a captured token can neither be replayed nor used for another call. Without that
  file (``--insecure`` loopback tests) the Control API stays open.
- **SuperLink, runs**: a run is accepted only if its app is fedstruct's deployment
  app (:func:`app_problem`): a bundle holding nothing but its ``pyproject.toml``,
  whose components are :mod:`fedstruct.deployment.app`'s and which asks for
  no package; apps stored on, or fetched from, Flower Hub are refused.
- **SuperLink, results**: one call of fedstruct's own joins the Control API,
  :data:`RESULTS_PATH` (:func:`results_endpoint`): a run's results folder, a list of
  its files then each file in chunks, for whoever submitted it; it is authenticated
  and bound to its arguments like every other call, and answered by
  :data:`FEDSTRUCT_RESULTS` (docs/deploy.md, "Results back to the submitter").
- **SuperLink, polls**: a poll for messages that finds none (a SuperNode's for its
  next message, the ServerApp's for replies) is held up to :data:`HOLD_SECONDS` and
  answered as soon as a message for it and all of that message's objects have been
  pushed (:class:`HeldPolls`), instead of the poller asking again and again; at most
  :data:`MAX_HELD` polls are held at once, others are answered at once as Flower
  answers them. No check is skipped: a held poll is Flower's own poll, made again.
- **SuperNode**: before a run's first message is handed to any app process, the
  node checks the run's app the same way and answers every message of a foreign app
  with Flower's "invalid FAB" error instead of running it.

A guarded SuperLink started with ``--isolation process`` (as
:func:`~fedstruct.fl.flower.cluster.superlink_command` starts it) starts no
``flower-superexec``: :func:`main` gives Flower a SuperExec secret of its own
(:mod:`fedstruct.fl.flower.serverapps`), so that the SuperLink refuses an unsigned ask
for a run to start, and runs a dispatcher that hands each run the SuperLink accepts to
a warm ServerApp (:func:`guard_superlink` wakes it when ``start_run`` accepts one).

A guarded SuperNode started with ``--isolation process`` answers its messages with warm
workers, one per run (:mod:`fedstruct.fl.flower.dispatch`, at the Runtime API its
``--host`` and ``--port`` give; :func:`runtime_address`): each message it pulls is
handed to the dispatcher at once and its answer awaited before Flower's loop looks for
it. Every guarded SuperNode polls the SuperLink again :data:`FASTEST_POLL` seconds
after a message, and as soon again after an empty poll the SuperLink held (a guarded
SuperLink's: it listens for the node's next message); after an empty poll answered at
once (a SuperLink that holds none, or all its slots taken), 1.5 times as long after each,
at most :data:`ACTIVE_POLL` seconds apart for :data:`ACTIVE_SECONDS` after a message (a
run's next message is picked up within that), then up to the seconds
:data:`POLL_INTERVAL_ENV` gives (Flower's own wait, 3 s, when unset): an idle node
asks no more often than Flower's would.

The guards wrap Flower functions (the Control API's handlers, ``start_run``
among them, and the SuperNode's ``_pull_and_store_message``) and replace its
authentication-plugin loader, all through :mod:`fedstruct.fl.flower.adapter`, which
refuses a Flower version it was not checked against (1.41 and 1.42).
"""

from __future__ import annotations

import functools
import inspect
import io
import os
import signal
import sys
import threading
import time
import tomllib
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from logging import ERROR, WARNING
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from flwr.common import log

from fedstruct.errors import ConfigError
from fedstruct.fl.flower import adapter
from fedstruct.fl.flower.adapter import (
    ACCESS_TOKEN_KEY,
    NO_ACCOUNT,
    AccountAuthCredentials,
    AccountAuthLoginDetails,
    AccountInfo,
    ApiErrorCode,
    ControlAuthnPlugin,
    FlowerError,
)
from fedstruct.fl.flower.control import RESULTS_PATH
from fedstruct.fl.flower.credentials import (
    TOKEN_LIFETIME,
    ControlClaims,
    ControlTokenError,
    call_binding,
    load_control_keys,
    verify_control_token,
)

if TYPE_CHECKING:
    from fedstruct.fl.flower.dispatch import Dispatcher

__all__ = [
    "ACTIVE_POLL",
    "ACTIVE_SECONDS",
    "CONTROL_KEYS_ENV",
    "FASTEST_POLL",
    "FEDSTRUCT_COMPONENTS",
    "FEDSTRUCT_RESULTS",
    "HOLD_SECONDS",
    "MAX_HELD",
    "POLL_INTERVAL_ENV",
    "RESULTS_PATH",
    "BoundAccount",
    "ControlKeyAuthn",
    "HeldPolls",
    "app_problem",
    "bind_control_handlers",
    "guard_superlink",
    "guard_supernode",
    "load_component",
    "main",
    "poll_interval",
    "results_endpoint",
    "runtime_address",
    "stop_with",
]

#: Environment variable naming the SuperLink's file of control public keys.
CONTROL_KEYS_ENV = "FEDSTRUCT_CONTROL_KEYS"
#: Environment variable: seconds a guarded SuperNode waits between polls of the SuperLink.
POLL_INTERVAL_ENV = "FEDSTRUCT_SUPERNODE_POLL_INTERVAL"
#: Environment variable: a process ID; the guarded daemon stops, as on Ctrl-C, once that
#: process has ended (a :class:`~fedstruct.fl.flower.loopback.LoopbackCluster` names its
#: own, so that a cluster whose owner was killed does not outlive it).
STOP_WITH_ENV = "FEDSTRUCT_FLOWER_STOP_WITH"
#: Flower's own wait after a poll that brought no message.
_FLOWER_POLL_INTERVAL = adapter.FLOWER_POLL_WAIT
#: Seconds a guarded SuperNode waits before its first poll after a message.
FASTEST_POLL = 0.05
#: How much longer each wait after an empty poll is than the one before.
_POLL_BACKOFF = 1.5
#: The longest wait while a run is going: within :data:`ACTIVE_SECONDS` of a message.
ACTIVE_POLL = 0.25
ACTIVE_SECONDS = 10.0
#: Seconds the SuperLink holds a poll for messages that finds none (:class:`HeldPolls`):
#: Flower's own wait between a SuperNode's polls, so that a node held that long asks no
#: more often than Flower's would.
HOLD_SECONDS = _FLOWER_POLL_INTERVAL
#: An empty poll that took this long or longer was held by the SuperLink.
_HELD = HOLD_SECONDS / 2
#: At most this many polls held at once: each holds one of the SuperLink's threads.
MAX_HELD = 16
#: The components of the only app a guarded SuperLink or SuperNode runs.
FEDSTRUCT_COMPONENTS = {
    "serverapp": "fedstruct.deployment.app:server_app",
    "clientapp": "fedstruct.deployment.app:client_app",
}
_APP_FILES = {"pyproject.toml", ".info/CONTENT"}
#: What answers fedstruct's results call (:data:`RESULTS_PATH`) on the SuperLink:
#: ``answer(request JSON) -> bytes``, raising a FedstructError to refuse (named as the
#: app's components are: it lives in a layer above this one).
FEDSTRUCT_RESULTS = "fedstruct.deployment.results:answer"


def _log(level: int, text: str) -> None:
    log(level, "fedstruct guard: %s", text)


def _table(value: Any, *keys: str) -> Any:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def app_problem(fab: bytes) -> str | None:
    """Why the Flower App Bundle ``fab`` is not fedstruct's deployment app, or ``None``.

    fedstruct's app (written by :func:`~fedstruct.deployment.submit.write_app`)
    ships no code: only a ``pyproject.toml`` naming the installed fedstruct's
    components, so a bundle with any other file, other components or dependencies
    would run code that is not the installed fedstruct's.
    """
    try:
        bundle = zipfile.ZipFile(io.BytesIO(fab))
        names = bundle.namelist()
        text = bundle.read("pyproject.toml").decode()
    except (zipfile.BadZipFile, KeyError, UnicodeDecodeError, OSError):
        return "it is not a Flower App Bundle with a readable pyproject.toml"
    extra = sorted(set(names) - _APP_FILES)
    if extra or len(names) != len(set(names)):
        shown = ", ".join(extra[:3]) or "a file twice"
        return f"it ships files of its own ({shown}); fedstruct's app ships none"
    try:
        config = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return "its pyproject.toml is not valid TOML"
    components = _table(config, "tool", "flwr", "app", "components")
    if components != FEDSTRUCT_COMPONENTS:
        return f"its components {components!r} are not fedstruct's deployment app's"
    if _table(config, "project", "dependencies"):
        return "it asks for packages to be installed; fedstruct's app asks for none"
    return None


# ------------------------------------------------------------- the SuperLink
@dataclass
class BoundAccount(AccountInfo):
    """Flower's account of a Control API call made with a valid control token, with the
    :func:`~fedstruct.fl.flower.credentials.call_binding` of the one call the token
    allows (checked by :func:`bind_control_handlers`)."""

    binding: str = ""


class _Nonces:
    """The nonces of the tokens accepted, each remembered until its token expires."""

    def __init__(self) -> None:
        self._until: dict[str, float] = {}
        self._lock = threading.Lock()

    def first_use(self, claims: ControlClaims, now: float | None = None) -> bool:
        """Whether ``claims``' nonce is new (it is remembered from now on)."""
        now = time.time() if now is None else now
        with self._lock:
            self._until = {n: t for n, t in self._until.items() if t >= now}
            if claims.nonce in self._until:
                return False
            self._until[claims.nonce] = claims.issued + TOKEN_LIFETIME + 1
            return True


class ControlKeyAuthn(ControlAuthnPlugin):
    """Control-API authentication: a call is answered only with a valid control token,
    each token once.

    The caller sends the token as its OIDC access token (``Authorization: Bearer``,
    :mod:`fedstruct.fl.flower.control`); the account Flower hands to the call's handler
    is a :class:`BoundAccount` naming the call the token allows.
    """

    def __init__(self, keys: dict[str, Any] | None = None) -> None:
        self.keys = keys or {}
        self._nonces = _Nonces()

    def get_login_details(self) -> AccountAuthLoginDetails | None:
        """No interactive login: tokens are signed with a control key."""
        return None

    def validate_tokens_in_metadata(
        self, metadata: Sequence[tuple[str, str | bytes]]
    ) -> tuple[bool, AccountInfo | None]:
        """Accept a call whose access token one of the control keys signed recently and
        that was not used before."""
        token = next((v for k, v in metadata if k == ACCESS_TOKEN_KEY), None)
        if isinstance(token, bytes):
            token = token.decode(errors="replace")
        try:
            if not token:
                raise ControlTokenError("no control token")
            claims = verify_control_token(token, self.keys)
            if not self._nonces.first_use(claims):
                raise ControlTokenError("the control token was used before (a replay)")
        except ControlTokenError as refused:
            _log(WARNING, f"refused a Control API call: {refused}")
            return False, None
        return True, BoundAccount(*NO_ACCOUNT, binding=claims.binding)

    def get_auth_tokens(self, device_code: str) -> AccountAuthCredentials | None:
        """No token exchange: tokens are made by the key holder."""
        raise FlowerError(
            ApiErrorCode.NO_ACCOUNT_AUTH,
            "this SuperLink takes fedstruct control tokens; there is no login",
        )

    def refresh_tokens(
        self, metadata: Sequence[tuple[str, str | bytes]]
    ) -> tuple[Sequence[tuple[str, str | bytes]] | None, AccountInfo | None]:
        """No refresh: the key holder signs a new token."""
        return [], None


#: The words a call refused for its token's binding starts with (the caller names them).
WRONG_CALL = "the control token was made for another call or other arguments"


def _bound(name: str, handler: Callable[..., Any]) -> Callable[..., Any]:
    """``handler`` answering only an account whose token names this call and request."""
    signature = inspect.signature(handler)

    @functools.wraps(handler)
    def answer_the_call_the_token_names(*args: Any, **kwargs: Any) -> Any:
        given = signature.bind_partial(*args, **kwargs).arguments
        account, request = given.get("account"), given.get("request")
        if not isinstance(account, BoundAccount) or account.binding != call_binding(request):
            _log(WARNING, f"refused a Control API call ({name}): {WRONG_CALL}")
            raise FlowerError(
                ApiErrorCode.NO_PERMISSIONS,
                WRONG_CALL,
                public_details=f"{WRONG_CALL}; sign each call for itself",
            )
        return handler(*args, **kwargs)

    return answer_the_call_the_token_names


def bind_control_handlers(handlers: ModuleType) -> list[str]:
    """Make every Control API handler of ``handlers`` (Flower's ``control_handlers``: the
    functions taking ``request, account``, which both its gRPC servicer and its HTTP
    router call by module attribute) answer only a :class:`BoundAccount` whose token
    was made for that call with that request; the names of the handlers bound."""
    bound = []
    for name, handler in vars(handlers).items():
        if not inspect.isfunction(handler) or handler.__module__ != handlers.__name__:
            continue
        if list(inspect.signature(handler).parameters)[:2] == ["request", "account"]:
            setattr(handlers, name, _bound(name, handler))
            bound.append(name)
    return bound


def _checked_start_run(start_run: Callable[..., Any]) -> Callable[..., Any]:
    def start_run_of_fedstruct_app(request: Any, *args: Any, **kwargs: Any) -> Any:
        if request.app_spec or not request.fab.content:
            reason = "it names an app stored on the SuperLink or on Flower Hub"
        else:
            reason = app_problem(bytes(request.fab.content))
        if reason is not None:
            _log(ERROR, f"refused a run: {reason}")
            raise FlowerError(
                ApiErrorCode.NO_PERMISSIONS,
                f"refused a run: {reason}",
                public_details=f"this SuperLink runs fedstruct's app only: {reason}",
            )
        return start_run(request, *args, **kwargs)

    return start_run_of_fedstruct_app


def results_endpoint(answer: Callable[[str], bytes], bound: bool) -> Callable[..., Any]:
    """The SuperLink's endpoint of :data:`RESULTS_PATH`: its request is a protobuf
    ``StringValue`` (fedstruct's JSON request), its answer a ``BytesValue`` holding
    ``answer(request)``. With ``bound`` (a SuperLink with control keys) it answers only
    a :class:`BoundAccount` whose token was made for this very request, as
    :func:`bind_control_handlers` makes Flower's handlers do; Flower authenticated the
    call before (:func:`~fedstruct.fl.flower.adapter.add_control_route`). A
    FedstructError of ``answer`` is refused with its one line."""
    from google.protobuf.message import DecodeError  # type: ignore[import-untyped]
    from google.protobuf.wrappers_pb2 import BytesValue, StringValue  # type: ignore[import-untyped]
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import Response

    from fedstruct.errors import FedstructError

    media = adapter.protobuf_media_type()

    async def fedstruct_results(request: Request) -> Response:
        try:
            asked = StringValue.FromString(await request.body())
        except DecodeError:
            raise FlowerError(
                ApiErrorCode.FORBIDDEN_ACTION,
                "not a fedstruct results request",
                public_details="not a fedstruct results request",
            ) from None
        account = getattr(request.state, "account", None)
        if bound and (
            not isinstance(account, BoundAccount) or account.binding != call_binding(asked)
        ):
            _log(WARNING, f"refused a Control API call (fedstruct results): {WRONG_CALL}")
            raise FlowerError(
                ApiErrorCode.NO_PERMISSIONS,
                WRONG_CALL,
                public_details=f"{WRONG_CALL}; sign each call for itself",
            )
        try:
            data = await run_in_threadpool(answer, asked.value)
        except FedstructError as refused:
            raise FlowerError(
                ApiErrorCode.FORBIDDEN_ACTION, str(refused), public_details=str(refused)
            ) from None
        return Response(BytesValue(value=data).SerializeToString(), media_type=media)

    # FastAPI reads the annotations: the classes themselves, not this module's strings
    fedstruct_results.__annotations__ = {"request": Request, "return": Response}
    return fedstruct_results


def load_component(reference: str) -> Any:
    """The object ``module:name`` names (one of fedstruct's components), imported."""
    import importlib

    module, _, name = reference.partition(":")
    return getattr(importlib.import_module(module), name)


class HeldPolls:
    """The SuperLink's answers to polls for messages: a poll that finds none, or finds
    one whose objects are not all pushed yet, is held until a push of a message or
    object lets it find what it asked for, at most ``seconds`` (then answered as it
    stands); at most ``slots`` are held at once, others are answered at once.

    :func:`~fedstruct.fl.flower.adapter.wrap_message_polls` calls :meth:`hold` for each
    poll and :meth:`pushed` after each push.
    """

    def __init__(self, seconds: float = HOLD_SECONDS, slots: int = MAX_HELD) -> None:
        self.seconds = seconds
        self._pushes = 0
        self._pushed = threading.Condition()
        self._slots = threading.BoundedSemaphore(slots)

    def pushed(self) -> None:
        """A message or an object was pushed: every held poll looks again."""
        with self._pushed:
            self._pushes += 1
            self._pushed.notify_all()

    def hold(
        self,
        pull: Callable[[], Any],
        found: Callable[[Any], bool],
        ready: Callable[[Any], bool],
    ) -> Any:
        """``pull()``'s answer once ``found`` and ``ready`` say it holds messages whose
        objects are all there; ``pull`` again after a push while it holds none (a message
        it found is delivered: it is never pulled twice)."""
        with self._pushed:
            seen = self._pushes
        answer = pull()
        if (found(answer) and ready(answer)) or not self._slots.acquire(blocking=False):
            return answer
        try:
            deadline = time.monotonic() + self.seconds
            while True:
                with self._pushed:
                    while self._pushes == seen:
                        left = deadline - time.monotonic()
                        if left <= 0:
                            return answer
                        self._pushed.wait(left)
                    seen = self._pushes
                if not found(answer):
                    answer = pull()
                if found(answer) and ready(answer):
                    return answer
        finally:
            self._slots.release()


def _announced_run(start_run: Callable[..., Any], dispatcher: Dispatcher) -> Callable[..., Any]:
    def start_run_and_wake_the_dispatcher(*args: Any, **kwargs: Any) -> Any:
        answer = start_run(*args, **kwargs)
        if getattr(answer, "run_id", 0):  # a run is there to start
            dispatcher.task_created()
        return answer

    return start_run_and_wake_the_dispatcher


def guard_superlink(control_keys: Path | None, dispatcher: Dispatcher | None = None) -> None:
    """Install the SuperLink's guards in this process (module docstring); ``dispatcher``:
    the one that hands each accepted run to a warm ServerApp, woken when a run is
    accepted (``None``: Flower's SuperExec starts a process per run)."""
    if control_keys is not None:
        adapter.replace_control_authn_plugin(ControlKeyAuthn(load_control_keys(control_keys)))
        bind_control_handlers(adapter.control_handlers())
    adapter.wrap_start_run(_checked_start_run)
    if dispatcher is not None:
        adapter.wrap_start_run(lambda start_run: _announced_run(start_run, dispatcher))
    polls = HeldPolls()
    adapter.wrap_message_polls(polls.hold, polls.pushed)
    answer = load_component(FEDSTRUCT_RESULTS)
    adapter.add_control_route(RESULTS_PATH, results_endpoint(answer, control_keys is not None))


# ------------------------------------------------------------- the SuperNode
class _ForeignApp(Exception):
    """The run's app is not fedstruct's (the message is why)."""


def _checked_pull(pull: Callable[..., Any]) -> Callable[..., Any]:
    def pull_for_fedstruct_app_only(**kwargs: Any) -> Any:
        received: list[Any] = []
        receive, get_fab = kwargs["receive"], kwargs["get_fab"]

        def receive_and_keep() -> Any:
            got = receive()
            if got is not None:
                received.append(got[0])
            return got

        def checked_get_fab(fab_hash: str, run_id: int) -> Any:
            fab = get_fab(fab_hash, run_id)
            reason = app_problem(bytes(fab.content))
            if reason is not None:
                raise _ForeignApp(reason)
            return fab

        try:
            return pull(**{**kwargs, "receive": receive_and_keep, "get_fab": checked_get_fab})
        except _ForeignApp as refused:
            message = received[-1]
            _log(ERROR, f"refused run {message.metadata.run_id}: {refused}")
            reason = f"the SuperNode runs fedstruct's app only: {refused}"
            adapter.store_error_reply(message, reason, kwargs["state"], kwargs["object_store"])
            return message.metadata.run_id

    return pull_for_fedstruct_app_only


def _polled_soon(pull: Callable[..., Any], slowest: float) -> Callable[..., Any]:
    """``pull`` retried until it brings a message, :data:`FASTEST_POLL` seconds after
    the last message, each wait :data:`_POLL_BACKOFF` times the one before, at most
    :data:`ACTIVE_POLL` within :data:`ACTIVE_SECONDS` of the last message (the run's
    next message: its round's other nodes may answer later than this one), then at
    most ``slowest``: Flower's loop then never reaches its own 3 s wait. An empty poll
    the SuperLink held (:class:`HeldPolls`: it took :data:`_HELD` seconds or more) is
    followed by the next :data:`FASTEST_POLL` seconds later: the node then listens for
    its next message nearly all the time, asking once per :data:`HOLD_SECONDS`."""
    wait, last = FASTEST_POLL, time.monotonic()

    def pull_soon_after_a_message(**kwargs: Any) -> Any:
        nonlocal wait, last
        while True:
            asked = time.monotonic()
            if (run_id := pull(**kwargs)) is not None:
                break
            if time.monotonic() - asked >= _HELD:  # the SuperLink waited for a message
                time.sleep(FASTEST_POLL)
                continue
            time.sleep(wait)
            active = time.monotonic() - last < ACTIVE_SECONDS
            wait = min(ACTIVE_POLL if active else slowest, slowest, wait * _POLL_BACKOFF)
        wait, last = FASTEST_POLL, time.monotonic()
        return run_id

    return pull_soon_after_a_message


def _answered_by(pull: Callable[..., Any], dispatcher: Dispatcher) -> Callable[..., Any]:
    """Flower's ``pull``, which stores a message and makes a task of it, followed by the
    task's answer: the dispatcher is woken at once, and Flower's loop, which polls the
    node's state for the answer every half second, finds it there."""

    def pull_and_answer(**kwargs: Any) -> Any:
        since = dispatcher.answered
        run_id = pull(**kwargs)
        if run_id is not None:  # a task was made (a refused app raised before)
            dispatcher.task_created()
            dispatcher.wait(since)
        return run_id

    return pull_and_answer


def poll_interval(environ: Mapping[str, str]) -> float | None:
    """The SuperNode's poll interval in ``environ`` (:data:`POLL_INTERVAL_ENV`), or
    ``None`` for Flower's own.

    Raises
    ------
    ConfigError
        If the value is not a number of seconds above 0 and at most Flower's 3 s.
    """
    raw = environ.get(POLL_INTERVAL_ENV)
    if raw is None or not raw.strip():
        return None
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0 < value <= _FLOWER_POLL_INTERVAL:
        raise ConfigError(
            f"{POLL_INTERVAL_ENV}={raw!r} is not a number of seconds in (0, "
            f"{_FLOWER_POLL_INTERVAL:g}]; set it to e.g. 0.2, or unset it for Flower's "
            f"{_FLOWER_POLL_INTERVAL:g} s"
        )
    return value


def stop_with(environ: Mapping[str, str]) -> int | None:
    """The process ID in ``environ`` (:data:`STOP_WITH_ENV`) whose end stops the daemon,
    or ``None``.

    Raises
    ------
    ConfigError
        If the value is not a whole number above 0.
    """
    raw = environ.get(STOP_WITH_ENV, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) == 0:
        raise ConfigError(
            f"{STOP_WITH_ENV}={raw!r} is not a process ID; set it to the PID whose end "
            "should stop this daemon, or unset it"
        )
    return int(raw)


def _stop_when_ended(owner: int) -> None:
    """Send this process SIGTERM (the daemon's own way out, as ``LoopbackCluster.stop``
    sends it) once process ``owner`` has ended. When ``owner`` is this process's parent,
    its end is seen as soon as this process is handed to another parent, before the
    owner is reaped (a killed owner nobody waits for stays a zombie that ``kill(pid,
    0)`` still finds)."""
    parent = os.getppid() == owner

    def alive() -> bool:
        if parent:
            return os.getppid() == owner
        try:
            os.kill(owner, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def watch() -> None:
        while alive():
            time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGTERM)  # to the process: its main thread wakes

    threading.Thread(target=watch, name="fedstruct-stop-with", daemon=True).start()


def runtime_address(argv: Sequence[str]) -> str | None:
    """The Runtime API (``host:port``) of the SuperNode whose ``flower-supernode``
    arguments are ``argv``, if it runs with ``--isolation process`` (its ClientApp tasks
    then go to fedstruct's warm workers); ``None`` otherwise."""
    import argparse

    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--isolation")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port")
    known, _ = parser.parse_known_args(list(argv))
    if known.isolation != adapter.CLIENTAPP_ISOLATION or not known.port:
        return None
    host = f"[{known.host}]" if ":" in known.host else known.host
    return f"{host}:{known.port}"


def guard_supernode(interval: float | None = None, dispatcher: Dispatcher | None = None) -> None:
    """Install the SuperNode's guard in this process (module docstring); ``interval``:
    the longest wait between polls of the SuperLink (``None``: Flower's 3 s);
    ``dispatcher``: the one that hands the node's tasks to warm workers (``None``:
    Flower starts a process per message)."""

    def guarded(pull: Callable[..., Any]) -> Callable[..., Any]:
        answered = pull if dispatcher is None else _answered_by(pull, dispatcher)
        checked = _checked_pull(answered)
        return _polled_soon(checked, _FLOWER_POLL_INTERVAL if interval is None else interval)

    adapter.wrap_message_pull(guarded)


# ---------------------------------------------------------------- entry point
def main(argv: Sequence[str] | None = None) -> None:
    """``python -m fedstruct.fl.flower.guard flower-superlink|flower-supernode ARGS``:
    install the guards, then run Flower's daemon with ``ARGS``."""
    args = list(sys.argv[1:] if argv is None else argv)
    daemons = ("flower-superlink", "flower-supernode")
    if not args or args[0] not in daemons:
        sys.exit(f"error: usage: python -m {__spec__.name} {'|'.join(daemons)} ARGS")
    sys.argv = args
    try:
        owner = stop_with(os.environ)
    except ConfigError as exc:
        sys.exit(f"error: {exc}")
    if owner is not None:
        _stop_when_ended(owner)
    if args[0] == "flower-superlink":
        from fedstruct.fl.flower.serverapps import (
            SuperLinkRuntime,
            serverapp_dispatcher,
            write_secret,
        )

        keys = os.environ.get(CONTROL_KEYS_ENV)
        link_runtime = SuperLinkRuntime.of(args[1:])
        serverapps = None
        if link_runtime is not None:  # warm ServerApps; the asks for a run signed
            secret = os.urandom(32)
            sys.argv += [adapter.SUPEREXEC_SECRET_FLAG, str(write_secret(secret))]
            serverapps = serverapp_dispatcher(link_runtime, secret).start()
        guard_superlink(Path(keys) if keys else None, serverapps)
        adapter.run_superlink()
    else:
        try:
            interval = poll_interval(os.environ)
        except ConfigError as exc:
            sys.exit(f"error: {exc}")
        runtime = runtime_address(args[1:])
        dispatcher = None
        if runtime is not None:
            from fedstruct.fl.flower.dispatch import Dispatcher

            dispatcher = Dispatcher(runtime).start()
        guard_supernode(interval, dispatcher)
        adapter.run_supernode()


if __name__ == "__main__":
    main()
