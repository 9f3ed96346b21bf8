"""The contract of every Flower internal fedstruct uses (fedstruct.fl.flower.adapter).

One test per symbol of ``adapter.SYMBOLS`` (it exists, with the parameters, fields or
members fedstruct relies on), tests of what the hooks rely on Flower doing with them
(the functions fedstruct replaces are looked up by name when used), and the refusal of a
Flower the adapter was not checked against: an upgrade fails in one line when a Flower
command starts, not deep in a run. Run on each Flower of ``adapter.CHECKED_FLOWER``.
"""

from __future__ import annotations

import ast
import hashlib
import http.server
import importlib
import importlib.metadata
import inspect
import io
import json
import sys
import threading
import tomllib
import zipfile
from pathlib import Path
from typing import ClassVar

import pytest

pytest.importorskip("flwr")

from fedstruct.errors import DeploymentError
from fedstruct.fl.flower import adapter

#: What every message of these tests is stamped with: Flower takes a new message's run
#: from the process's task (a SuperNode's, here).
RUN_ID = 7


@pytest.mark.parametrize("symbol", adapter.SYMBOLS, ids=lambda s: s.name)
def test_each_flower_internal_keeps_its_contract(symbol):
    assert symbol.problem() is None


def test_every_class_the_adapter_hands_out_is_in_the_inventory():
    inventory = {(s.module, s.attribute) for s in adapter.SYMBOLS}
    handed_out = {(module, name) for name, module in adapter._CLASSES.items()}
    assert handed_out <= inventory
    for name, module in adapter._CLASSES.items():
        assert getattr(adapter, name) is getattr(importlib.import_module(module), name)


def test_a_changed_flower_internal_is_named():
    """The contract check fails on a symbol that is gone or lacks what fedstruct uses."""
    gone = adapter.FlowerSymbol("flwr.supercore.no_such_module", "Thing")
    assert gone.problem().startswith("flwr.supercore.no_such_module.Thing is gone")
    renamed = adapter.FlowerSymbol("flwr.supercore.fab", "Fab", ("content", "bytes_of_it"))
    assert renamed.problem() == "flwr.supercore.fab.Fab no longer has bytes_of_it"
    field = adapter.FlowerSymbol("flwr.proto.control_pb2", "ListRunsRequest", ("runid",))
    assert field.problem() == "flwr.proto.control_pb2.ListRunsRequest no longer has runid"
    member = adapter.FlowerSymbol("flwr.common.constant", "ErrorCode", ("INVALID_APP",))
    assert member.problem() == "flwr.common.constant.ErrorCode no longer has INVALID_APP"


def test_every_series_the_extra_allows_is_checked_and_no_other():
    """pyproject's ``flower`` extra allows exactly the series of CHECKED_FLOWER, and the
    installed Flower is one of them."""
    assert adapter.require_checked_flower() == adapter.flower_version()
    for accepted in ("1.41.0", "1.41.7", "1.42.0", "1.42.1rc2"):
        assert adapter.require_checked_flower(accepted) == accepted
    pyproject = Path(adapter.__file__).parents[4] / "pyproject.toml"
    if not pyproject.is_file():
        pytest.skip("not a source checkout")
    extras = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]
    major, minor = map(int, adapter.CHECKED_FLOWER[-1].split("."))
    allowed = f"flwr[simulation]>={adapter.CHECKED_FLOWER[0]},<{major}.{minor + 1}"
    assert extras["flower"] == [allowed]
    assert adapter.CHECKED_FLOWER == ("1.41", "1.42")


@pytest.mark.parametrize("installed", ["1.40.2", "1.43.0", "2.0.0", "1.4"])
def test_a_flower_the_adapter_does_not_know_is_refused_in_one_line(installed):
    with pytest.raises(DeploymentError) as refused:
        adapter.require_checked_flower(installed)
    text = str(refused.value)
    assert "\n" not in text
    assert text.startswith(f"Flower {installed} is installed, but fedstruct's Flower adapter")
    assert "checked against Flower 1.41.x and 1.42.x only" in text
    assert "pip install 'flwr[simulation]>=1.41,<1.43'" in text


def _installed_flower_is(monkeypatch, installed):
    """The package metadata says Flower ``installed``; the adapter and the modules that
    import it are imported afresh (the originals are back after the test)."""
    monkeypatch.setattr(importlib.metadata, "version", lambda name: installed)
    for name in ("fedstruct.fl.flower.adapter", "fedstruct.fl.flower.guard"):
        monkeypatch.delitem(sys.modules, name, raising=False)


def test_importing_the_adapter_refuses_an_unknown_flower(monkeypatch):
    _installed_flower_is(monkeypatch, "1.43.0")
    with pytest.raises(DeploymentError, match=r"^Flower 1\.43\.0 is installed, but"):
        importlib.import_module("fedstruct.fl.flower.adapter")


@pytest.mark.parametrize("daemon", ["superlink", "supernode"])
def test_starting_a_daemon_on_an_unknown_flower_is_one_line_and_exit_2(
    monkeypatch, tmp_path, daemon
):
    """``fedstruct flower superlink|supernode`` refuse before they wait for a SuperLink
    (none answers here: the supernode would wait 60 s), write a file or start Flower."""
    import os

    from typer.testing import CliRunner

    from fedstruct.cli import app
    from fedstruct.fl.flower.loopback import free_port

    started = []
    monkeypatch.setattr(os, "execvpe", lambda *args: started.append(args))
    monkeypatch.chdir(tmp_path)
    _installed_flower_is(monkeypatch, "1.43.0")
    home, port = tmp_path / "home", free_port()
    where = ["--port", str(port)] if daemon == "superlink" else ["--partition", "0"]
    if daemon == "supernode":
        where += ["--superlink", f"127.0.0.1:{port}", "--wait", "60"]
    result = CliRunner().invoke(app, ["flower", daemon, "--insecure", *where, "--home", str(home)])
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert text.startswith("error: Flower 1.43.0 is installed, but fedstruct's Flower adapter")
    assert "Traceback" not in result.output and started == []
    assert not home.exists()


# ------------------------------------------------------------- the SuperLink
def _names_called(code, callee):
    """The calls of ``callee`` (a bare name: a global looked up when called) in the
    source of ``code`` (a function or module): their positional argument counts and
    keyword names."""
    tree = ast.parse(inspect.getsource(code).lstrip())
    return [
        (len(node.args), sorted(k.arg for k in node.keywords if k.arg))
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == callee
    ]


def test_the_superlink_asks_for_its_plugin_by_name_when_it_starts(monkeypatch):
    """replace_control_authn_plugin works because the flower-superlink command's module
    looks the loader up by its global name when the SuperLink starts."""
    cli = importlib.import_module("flwr.superlink.cli.flower_superlink")
    monkeypatch.setattr(cli, "load_control_authn_plugin", cli.load_control_authn_plugin)
    assert _names_called(cli, "load_control_authn_plugin") == [(0, [])]
    assert importlib.import_module("flwr.superlink.cli").flower_superlink is cli.flower_superlink
    plugin = object()
    adapter.replace_control_authn_plugin(plugin)
    assert cli.load_control_authn_plugin() is plugin


def test_both_control_transports_call_the_handlers_by_module_attribute():
    """A handler set on the control_handlers module answers its call over gRPC and HTTP:
    neither the servicer nor the router keeps a handler of its own."""
    handlers = adapter.control_handlers()
    taking_an_account = {
        name
        for name, fn in vars(handlers).items()
        if inspect.isfunction(fn)
        and fn.__module__ == handlers.__name__
        and list(inspect.signature(fn).parameters)[:2] == ["request", "account"]
    }
    used = {"start_run", "list_runs", "stop_run", "register_node", "unregister_node"}
    assert used <= taking_an_account
    for transport in (
        "flwr.superlink.servicer.control.control_servicer",
        "flwr.superlink.routers.control.router",
    ):
        module = importlib.import_module(transport)
        source = inspect.getsource(module)
        assert all(f"control_handlers.{name}(" in source for name in used), transport
        own = [n for n in taking_an_account if getattr(module, n, None) is vars(handlers)[n]]
        assert own == [], f"{transport} holds handlers of its own: {own}"


def test_wrap_start_run_replaces_the_handler_the_transports_call(monkeypatch):
    handlers = adapter.control_handlers()
    monkeypatch.setattr(handlers, "start_run", handlers.start_run)
    original = handlers.start_run
    adapter.wrap_start_run(lambda start_run: ("wrapped", start_run))
    assert handlers.start_run == ("wrapped", original)


def test_both_message_apis_call_their_poll_and_push_handlers_by_module_attribute():
    """The Fleet API (HTTP router and gRPC servicer) and the ServerApp's Runtime API call
    pull_messages, push_messages and push_object on MESSAGE_HANDLERS' modules at each
    call (wrap_message_polls replaces them there), with the arguments it reads; the
    SuperLink's object store answers get() as wrap_message_polls' ready expects."""
    fleet, runtime = (importlib.import_module(name) for name in adapter.MESSAGE_HANDLERS)
    for transport in (
        "flwr.superlink.routers.fleet.router",
        "flwr.server.superlink.fleet.grpc_rere.fleet_servicer",
    ):
        source = inspect.getsource(importlib.import_module(transport))
        for name in ("pull_messages", "push_messages", "push_object"):
            assert f"fleet_handlers.{name}(" in source, (transport, name)
    assert importlib.import_module("flwr.superlink.main")._RUNTIME_HANDLERS is runtime
    source = inspect.getsource(importlib.import_module("flwr.supercore.routers.runtime.router"))
    for name in ("pull_messages", "push_messages", "push_object"):
        assert f"handlers.{name}(request, state, task)" in source, name
    assert list(inspect.signature(fleet.pull_messages).parameters) == ["request", "state", "store"]
    assert list(inspect.signature(runtime.pull_messages).parameters) == ["request", "state", "task"]
    from flwr.app import ConfigRecord, RecordDict
    from flwr.supercore.inflatable.inflatable_object import get_all_nested_objects, get_object_tree
    from flwr.supercore.object_store import ObjectStoreFactory

    content = RecordDict({"c": ConfigRecord({"x": 1})})  # two objects: a tree of depth 2
    tree, objects = get_object_tree(content), get_all_nested_objects(content)
    (leaf,) = tree.children
    for store in (ObjectStoreFactory().store(), ObjectStoreFactory(":memory:").store()):
        assert not adapter._objects_in(store, [tree])  # unknown
        store.preregister(1, tree)
        assert not adapter._objects_in(store, [tree])  # registered, not pushed
        store.put(tree.object_id, objects[tree.object_id].deflate())
        assert not adapter._objects_in(store, [tree])  # its child not pushed
        store.put(leaf.object_id, objects[leaf.object_id].deflate())
        assert adapter._objects_in(store, [tree])


def test_wrap_message_polls_holds_every_poll_and_announces_every_push(monkeypatch):
    calls: list[tuple] = []
    for name in adapter.MESSAGE_HANDLERS:
        module = importlib.import_module(name)
        for attr in ("pull_messages", "push_messages", "push_object"):
            monkeypatch.setattr(module, attr, getattr(module, attr))
    fleet, runtime = (importlib.import_module(name) for name in adapter.MESSAGE_HANDLERS)

    class Answer:
        messages_list: ClassVar[list] = ["m"]
        message_object_trees: ClassVar[list] = []

    monkeypatch.setattr(fleet, "pull_messages", lambda request, state, store: Answer)
    monkeypatch.setattr(runtime, "push_object", lambda request, state, task: "stored")

    def hold(pull, found, ready):
        answer = pull()
        calls.append(("hold", found(answer), ready(answer)))
        return answer

    adapter.wrap_message_polls(hold, lambda: calls.append(("pushed",)))
    assert fleet.pull_messages(request=None, state=None, store=None) is Answer
    assert runtime.push_object(None, None, None) == "stored"
    assert calls == [("hold", True, True), ("pushed",)]


# ------------------------------------------------------------- the SuperNode
def test_the_supernode_pulls_by_name_with_keywords_and_waits_its_interval(monkeypatch):
    """The SuperNode's loop calls _pull_and_store_message by name with keyword arguments
    only (wrap_message_pull's wrapper sees them all), and sleeps FLOWER_POLL_WAIT
    seconds after a pull without a message (the guard's poll interval is below it)."""
    node = importlib.import_module("flwr.supernode.start_client_internal")
    calls = _names_called(node.start_client_internal, "_pull_and_store_message")
    assert len(calls) == 1
    positional, keywords = calls[0]
    assert positional == 0
    assert {"receive", "get_fab", "state", "object_store"} <= set(keywords)
    assert f"time.sleep({adapter.FLOWER_POLL_WAIT:g})" in inspect.getsource(
        node.start_client_internal
    )
    monkeypatch.setattr(node, "_pull_and_store_message", node._pull_and_store_message)
    original = node._pull_and_store_message
    adapter.wrap_message_pull(lambda pull: ("wrapped", pull))
    assert node._pull_and_store_message == ("wrapped", original)


@pytest.fixture
def node_task(monkeypatch):
    """A SuperNode's task identity (run RUN_ID), as Flower sets it in the node process."""
    from flwr.supercore.task_identity import TaskIdentity

    monkeypatch.setattr(TaskIdentity, "_run_id", RUN_ID, raising=False)
    monkeypatch.setattr(TaskIdentity, "_node_id", 1, raising=False)
    monkeypatch.setattr(TaskIdentity, "_task_id", 1, raising=False)


def test_a_refused_message_is_answered_with_flowers_invalid_app_error(node_task):
    """store_error_reply leaves in the node's state the reply the SuperNode sends: the
    'invalid FAB' error with fedstruct's reason, replying to the message refused."""
    from flwr.app import Message, RecordDict
    from flwr.supercore.object_store import ObjectStoreFactory
    from flwr.supernode.nodestate import NodeStateFactory

    stores = ObjectStoreFactory()
    state, object_store = NodeStateFactory(stores).state(), stores.store()
    message = Message(RecordDict(), dst_node_id=1, message_type="query")
    message.metadata.__dict__["_message_id"] = message.object_id  # as pulled: it has an id
    adapter.store_error_reply(message, "not fedstruct's app", state, object_store)
    (reply,) = state.get_messages_legacy(is_reply=True)
    assert reply.has_error() and reply.error.code == adapter.INVALID_APP_CODE
    assert reply.error.reason == "not fedstruct's app"
    assert reply.metadata.reply_to_message_id == message.metadata.message_id
    assert reply.metadata.run_id == RUN_ID


def test_a_lost_reply_and_a_refused_app_have_codes_of_their_own():
    from flwr.common.constant import ErrorCode

    assert adapter.INVALID_APP_CODE not in adapter.LOST_REPLY_CODES
    assert adapter.LOST_REPLY_CODES < {v for k, v in vars(ErrorCode).items() if k.isupper()}
    assert adapter.ACCESS_TOKEN_KEY == "flwr-oidc-access-token"


# --------------------------------------------------------- Control API calls
def test_a_run_request_carries_the_bundle_of_fedstructs_app_and_its_hash(tmp_path):
    from fedstruct.deployment.submit import write_app

    fab = adapter.app_bundle(write_app(tmp_path / "app"))
    names = zipfile.ZipFile(io.BytesIO(fab)).namelist()
    assert "pyproject.toml" in names
    request = adapter.start_run_request(fab, {"method": "fedavg", "resume": True})
    assert request.fab.content == fab
    assert request.fab.hash_str == hashlib.sha256(fab).hexdigest()
    assert set(request.override_config) == {"method", "resume"}
    assert not request.app_spec  # what the SuperLink's guard checks: no stored app


def test_a_node_key_is_sent_in_the_form_the_superlink_stores():
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    public = ec.generate_private_key(ec.SECP384R1()).public_key()
    request = adapter.register_node_request(public)
    assert serialization.load_pem_public_key(request.public_key) == public
    assert adapter.unregister_node_request(12).node_id == 12
    assert adapter.list_runs_request(5).run_id == 5


class _Refusing(http.server.BaseHTTPRequestHandler):
    """Refuses every call with a FlowerError's JSON (HTTP 403), noting its headers."""

    seen: ClassVar[list[dict[str, str]]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).seen.append({"path": self.path, **dict(self.headers)})
        body = json.dumps({"code": 3, "detail": "Forbidden", "extra": "not yours"}).encode()
        self.send_response(403)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_the_control_client_hands_interceptors_the_request_and_raises_a_refusal():
    """control.SignedCalls relies on an interceptor seeing the request's protobuf message
    and its HTTP headers before it is sent, and control._call on a refusal arriving as
    httpx.HTTPStatusError with Flower's error in its body."""
    import httpx

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    seen_by_interceptor = []

    class Signing:
        def intercept(self, context, call_next):
            seen_by_interceptor.append(context.message)
            context.request.headers["Authorization"] = "Bearer token"
            return call_next(context)

    _Refusing.seen = []
    client = adapter.control_client(f"127.0.0.1:{server.server_address[1]}", None, [Signing()])
    try:
        with pytest.raises(httpx.HTTPStatusError) as refused:
            client.ListRuns(adapter.list_runs_request(5))
    finally:
        client.close()
        server.shutdown()
        server.server_close()
    assert [m.run_id for m in seen_by_interceptor] == [5]
    (headers,) = _Refusing.seen
    assert headers["Authorization"] == "Bearer token"
    assert headers["flwr-component-name"] == "flwr CLI"  # the CLI's own headers too
    assert adapter.flower_error_reason(refused.value.response.text) == "not yours"
    assert adapter.flower_error_reason("<html>bad gateway</html>") is None


def test_a_control_route_fedstruct_adds_is_authenticated_like_flowers_calls(monkeypatch):
    """add_control_route: the SuperLink's app, built as flower-superlink builds it, answers
    POST on the path with the endpoint once Flower has authenticated the call (its
    account on the request's state; a refused token never reaches the endpoint), and a
    FlowerError the endpoint raises reaches the caller as Flower's refusals do."""
    from fastapi.testclient import TestClient
    from starlette.requests import Request
    from starlette.responses import Response

    extensions = importlib.import_module("flwr.superlink.extensions")
    main = importlib.import_module("flwr.superlink.main")
    assert "extensions.configure_app(fastapi_app)" in inspect.getsource(main.create_app)
    monkeypatch.setattr(extensions, "configure_app", extensions.configure_app)
    account = adapter.AccountInfo(*adapter.NO_ACCOUNT)

    class Plugin:
        def validate_tokens_in_metadata(self, metadata):
            token = dict(metadata).get(adapter.ACCESS_TOKEN_KEY)
            return (token == "good", account if token == "good" else None)

    monkeypatch.setattr(main, "load_control_authn_plugin", Plugin)
    seen = []

    async def endpoint(request: Request) -> Response:
        seen.append(request.state.account)
        if await request.body() == b"refuse":
            raise adapter.FlowerError(
                adapter.ApiErrorCode.NO_PERMISSIONS, "no", public_details="not yours"
            )
        return Response(b"answer", media_type=adapter.protobuf_media_type())

    endpoint.__annotations__ = {"request": Request, "return": Response}
    adapter.add_control_route("/v1/control/fedstruct-test", endpoint)
    client = TestClient(main.create_app())
    path = "/v1/control/fedstruct-test"
    assert client.post(path, headers={"Authorization": "Bearer bad"}).status_code == 401
    assert client.post(path).status_code == 401
    assert seen == []
    answered = client.post(path, headers={"Authorization": "Bearer good"}, content=b"ask")
    assert (answered.status_code, answered.content) == (200, b"answer")
    assert seen == [account]
    refused = client.post(path, headers={"Authorization": "Bearer good"}, content=b"refuse")
    assert refused.status_code == 403
    assert adapter.flower_error_reason(refused.text) == "not yours"


def test_the_superlinks_runs_folder_is_made_when_missing_and_a_file_refused(monkeypatch, tmp_path):
    """``flower superlink --runs DIR`` (docs/deploy.md, step 3) makes ``DIR`` when it is
    missing, and hands it to the guarded SuperLink; a file there is one line, exit 2."""
    import os

    from typer.testing import CliRunner

    from fedstruct.cli import app
    from fedstruct.deployment.contract import RUNS_ENV
    from fedstruct.fl.flower.loopback import free_port

    started = []
    monkeypatch.setattr(os, "execvpe", lambda *args: started.append(args))
    monkeypatch.chdir(tmp_path)
    common = ["flower", "superlink", "--insecure", "--port", str(free_port())]
    common += ["--home", str(tmp_path / "home")]
    result = CliRunner().invoke(app, [*common, "--runs", "runs/archive"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "runs" / "archive").is_dir()
    ((_, _, env),) = started
    assert env[RUNS_ENV] == str((tmp_path / "runs" / "archive").resolve())
    (tmp_path / "a-file").write_text("x")
    refused = CliRunner().invoke(app, [*common, "--runs", "a-file"])
    assert refused.exit_code == 2
    assert "--runs a-file is not a folder" in refused.output and len(started) == 1
