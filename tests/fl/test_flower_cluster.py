"""Deployment commands, credentials and bad input, without starting a cluster."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path

import pytest

pytest.importorskip("flwr")

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding
from typer.testing import CliRunner

from fedstruct.cli import app
from fedstruct.errors import ConfigError
from fedstruct.fl.flower.cluster import Link, superlink_command, supernode_command
from fedstruct.fl.flower.credentials import make_certificates, make_node_key
from fedstruct.fl.flower.loopback import free_port
from fedstruct.runs.folder import prepare_out

runner = CliRunner()


def one_line_error(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    return " ".join(result.output.split())


def test_server_certificate_is_signed_by_the_ca_for_the_given_hosts(tmp_path):
    made = make_certificates(tmp_path, ["127.0.0.1", "coordinator.example.org"])
    ca = x509.load_pem_x509_certificate(made.ca_cert.read_bytes())
    server = x509.load_pem_x509_certificate(made.server_cert.read_bytes())
    ca.public_key().verify(  # raises if the CA did not sign it
        server.signature,
        server.tbs_certificate_bytes,
        padding.PKCS1v15(),
        server.signature_hash_algorithm,
    )
    san = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    assert san.get_values_for_type(x509.DNSName) == ["coordinator.example.org"]
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    assert made.server_key.stat().st_mode & 0o777 == 0o600


def test_node_key_is_p384_in_openssh_format(tmp_path):
    private, public = make_node_key(tmp_path / "hospital-a")
    key = serialization.load_ssh_private_key(private.read_bytes(), password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp384r1"
    text = public.read_text()
    assert text.startswith("ecdsa-sha2-nistp384 ") and text.rstrip().endswith("hospital-a")


def test_command_lines(tmp_path):
    make_certificates(tmp_path)
    insecure = superlink_command("0.0.0.0", 9091, certificates=None)
    assert insecure == [
        "flower-superlink",
        "--host",
        "0.0.0.0",
        "--port",
        "9091",
        "--disable-runtime-dependency-installation",
        "--isolation",
        "process",
        "--insecure",
    ]
    tls = superlink_command("0.0.0.0", 9091, certificates=tmp_path, node_auth=True)
    assert tls[-7:] == [
        "--ssl-ca-certfile",
        str(tmp_path / "ca.crt"),
        "--ssl-certfile",
        str(tmp_path / "server.pem"),
        "--ssl-keyfile",
        str(tmp_path / "server.key"),
        "--enable-supernode-auth",
    ]
    node = supernode_command(2, Link("10.0.0.5:9091"), port=9096)
    assert node == [
        "flower-supernode",
        "--superlink",
        "10.0.0.5:9091",
        "--host",
        "127.0.0.1",
        "--port",
        "9096",
        "--isolation",
        "process",
        "--node-config",
        "partition-id=2",
        "--insecure",
    ]
    with pytest.raises(ConfigError, match="node authentication needs TLS"):
        superlink_command("127.0.0.1", 9091, node_auth=True)
    with pytest.raises(ConfigError, match="not host:port"):
        Link("localhost")


def test_unreachable_superlink_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("FLWR_HOME", str(tmp_path / "home"))
    address = f"127.0.0.1:{free_port()}"
    text = one_line_error(
        [
            "run",
            "fedavg",
            "--backend",
            "flower",
            "--superlink",
            address,
            "--quiet",
            "--out",
            str(tmp_path / "run"),
        ]
    )
    assert f"error: cannot submit a run: the SuperLink at {address} does not answer" in text
    # recorded as failed, not as running: the same command works once a SuperLink is up
    assert json.loads((tmp_path / "run" / "run.json").read_text())["status"] == "failed"
    assert prepare_out(tmp_path / "run") == []  # reused, not "holds another run (running)"
    text = one_line_error(
        [
            "flower",
            "supernode",
            "--partition",
            "0",
            "--insecure",
            "--superlink",
            address,
            "--wait",
            "1",
        ]
    )
    assert f"error: the SuperLink at {address} is not reachable" in text


def test_missing_certificate_files_are_one_line(tmp_path):
    missing = tmp_path / "nope" / "ca.crt"
    text = one_line_error(
        [
            "run",
            "fedavg",
            "--backend",
            "flower",
            "--root-certificates",
            str(missing),
            "--out",
            str(tmp_path / "run"),
        ]
    )
    assert f"error: --root-certificates {missing} does not exist" in text
    text = one_line_error(["flower", "superlink", "--certificates", str(tmp_path / "none")])
    assert "certificate file" in text and "ca.crt does not exist" in text
    text = one_line_error(["flower", "superlink"])
    assert "give --certificates DIR for TLS, or --insecure" in text
    text = one_line_error(
        [
            "flower",
            "supernode",
            "--partition",
            "0",
            "--insecure",
            "--auth-key",
            str(tmp_path / "key"),
        ]
    )
    assert "--auth-key" in text and "does not exist" in text


def test_only_fedstruct_own_app_passes_the_guard(tmp_path, write_foreign_app):
    from fedstruct.deployment.submit import write_app
    from fedstruct.fl.flower.adapter import app_bundle as build_fab_from_disk
    from fedstruct.fl.flower.guard import FEDSTRUCT_COMPONENTS, app_problem

    assert app_problem(build_fab_from_disk(write_app(tmp_path / "ours"))) is None
    foreign = build_fab_from_disk(write_foreign_app(tmp_path / "foreign"))
    assert "ships files of its own (foreign.py)" in app_problem(foreign)
    # fedstruct's component names, but with a module of its own that would shadow ours
    shadow = write_foreign_app(tmp_path / "shadow", components=FEDSTRUCT_COMPONENTS)
    assert "ships files of its own" in app_problem(build_fab_from_disk(shadow))
    (shadow / "foreign.py").unlink()
    assert app_problem(build_fab_from_disk(shadow)) is None  # no code: the installed one runs
    (shadow / "pyproject.toml").write_text(
        (shadow / "pyproject.toml").read_text().replace("dependencies = []", 'dependencies = ["x"]')
    )
    assert "asks for packages" in app_problem(build_fab_from_disk(shadow))
    other = write_foreign_app(
        tmp_path / "other", components={"serverapp": "os:system", "clientapp": "os:system"}
    )
    (other / "foreign.py").unlink()
    assert "are not fedstruct's" in app_problem(build_fab_from_disk(other))
    assert "not a Flower App Bundle" in app_problem(b"not a zip")


def test_control_tokens_are_checked_by_key_signature_and_age(tmp_path):
    from fedstruct.fl.flower.adapter import list_runs_request
    from fedstruct.fl.flower.credentials import (
        TOKEN_LIFETIME,
        ControlTokenError,
        call_binding,
        control_token,
        load_control_keys,
        make_control_key,
        verify_control_token,
    )
    from fedstruct.fl.flower.guard import BoundAccount, ControlKeyAuthn

    key, pub = make_control_key(tmp_path / "coordinator")
    other, other_pub = make_control_key(tmp_path / "other")
    assert key.stat().st_mode & 0o777 == 0o600 and pub.read_text().startswith("ssh-ed25519 ")
    keys = load_control_keys(pub)
    binding = call_binding(list_runs_request(5))
    token = control_token(key, binding)
    claims = verify_control_token(token, keys)
    assert claims.binding == binding
    with pytest.raises(ControlTokenError, match="not among the SuperLink's --control-keys"):
        verify_control_token(control_token(other, binding), keys)
    old = control_token(key, binding, now=1e9)
    with pytest.raises(ControlTokenError, match="expired"):
        verify_control_token(old, keys)
    assert verify_control_token(old, keys, now=1e9 + TOKEN_LIFETIME - 1).issued == int(1e9)
    body, _, signature = token.rpartition(".")
    issued = body.split(".")[2]
    forged = body.replace(issued, str(int(issued) + 1))
    with pytest.raises(ControlTokenError, match="signature"):
        verify_control_token(f"{forged}.{signature}", keys)
    # the call a token names is signed: naming another one breaks the signature
    rebound = body.replace(binding, call_binding(list_runs_request(6)))
    with pytest.raises(ControlTokenError, match="signature"):
        verify_control_token(f"{rebound}.{signature}", keys)
    with pytest.raises(ControlTokenError, match="not a fedstruct control token"):
        verify_control_token("abc", keys)
    plugin = ControlKeyAuthn(keys)
    assert plugin.validate_tokens_in_metadata([])[0] is False
    accepted, account = plugin.validate_tokens_in_metadata([("flwr-oidc-access-token", token)])
    assert accepted and isinstance(account, BoundAccount) and account.binding == binding
    # accepted once: the same token again is a replay
    assert plugin.validate_tokens_in_metadata([("flwr-oidc-access-token", token)])[0] is False
    # a file of several keys; a bad line is named
    (tmp_path / "keys").write_text(f"# coordinators\n{pub.read_text()}\n{other_pub.read_text()}")
    assert len(load_control_keys(tmp_path / "keys")) == 2
    (tmp_path / "bad").write_text("ssh-ed25519 AAAA\n")
    with pytest.raises(ConfigError, match=r"line 1 of --control-keys .* is not an Ed25519"):
        load_control_keys(tmp_path / "bad")
    with pytest.raises(ConfigError, match="is not an Ed25519 private key"):
        control_token(pub, binding)
    with pytest.raises(ConfigError, match=f"--control-key {tmp_path} is a folder"):
        control_token(tmp_path, binding)


def test_a_token_is_answered_only_for_the_call_and_arguments_it_names():
    """The guard's handlers (Flower's control handlers, wrapped) answer a call only with
    the account of a token bound to that call's request: a token made for one run's
    status neither lists another run nor registers a node."""
    import types

    from cryptography.hazmat.primitives.asymmetric import ec

    from fedstruct.fl.flower import adapter
    from fedstruct.fl.flower.adapter import list_runs_request, register_node_request
    from fedstruct.fl.flower.credentials import call_binding
    from fedstruct.fl.flower.guard import WRONG_CALL, BoundAccount, bind_control_handlers

    handlers = types.ModuleType("handlers")

    def list_runs(request, account, state):
        return ("listed", request.run_id)

    def register_node(request, account, state):
        return ("registered", request.public_key)

    def get_login_details(request, authn_plugin):
        return "no account needed"

    for fn in (list_runs, register_node, get_login_details):
        fn.__module__ = handlers.__name__
        setattr(handlers, fn.__name__, fn)
    assert sorted(bind_control_handlers(handlers)) == ["list_runs", "register_node"]
    rogue = ec.generate_private_key(ec.SECP384R1()).public_key()
    status = list_runs_request(5)
    account = BoundAccount(*adapter.NO_ACCOUNT, binding=call_binding(status))
    assert handlers.list_runs(status, account, None) == ("listed", 5)
    assert handlers.list_runs(request=status, account=account, state=None) == ("listed", 5)
    refused = [
        (list_runs_request(6), handlers.list_runs, account),  # other arguments
        (register_node_request(rogue), handlers.register_node, account),  # another call
        (status, handlers.list_runs, adapter.AccountInfo(*adapter.NO_ACCOUNT)),  # none
    ]
    for request, handler, who in refused:
        with pytest.raises(adapter.FlowerError, match=WRONG_CALL):
            handler(request, who, None)
    assert handlers.get_login_details(None, None) == "no account needed"


def test_a_tls_superlink_needs_control_keys(tmp_path):
    make_certificates(tmp_path)
    text = one_line_error(["flower", "superlink", "--certificates", str(tmp_path)])
    assert "give --control-keys FILE" in text
    (tmp_path / "keys").write_text("not a key\n")
    text = one_line_error(
        ["flower", "superlink", "--certificates", str(tmp_path), "--control-keys",
         str(tmp_path / "keys")]
    )  # fmt: skip
    assert "line 1 of --control-keys" in text
    text = one_line_error(
        ["run", "fedavg", "--backend", "flower", "--control-key", str(tmp_path / "nope"),
         "--out", str(tmp_path / "run")]
    )  # fmt: skip
    assert "--control-key" in text and "does not exist" in text


def test_a_guarded_supernode_polls_at_the_interval_the_environment_gives(monkeypatch):
    import importlib

    from fedstruct.fl.flower.guard import POLL_INTERVAL_ENV, guard_supernode, poll_interval

    assert poll_interval({}) is None  # Flower's own 3 s
    assert poll_interval({POLL_INTERVAL_ENV: "0.25"}) == 0.25
    for bad in ("0", "-1", "5", "soon", "nan"):
        with pytest.raises(ConfigError, match=f"{POLL_INTERVAL_ENV}='{bad}' is not a number"):
            poll_interval({POLL_INTERVAL_ENV: bad})
    from fedstruct.fl.flower.adapter import SYMBOLS

    pull = next(s for s in SYMBOLS if s.attribute == "_pull_and_store_message")
    node = importlib.import_module(pull.module)
    answers = iter([None, None, 7])  # two empty polls, then a message of run 7
    monkeypatch.setattr(node, "_pull_and_store_message", lambda **kwargs: next(answers))
    guard_supernode(0.01)
    # Flower's loop sleeps 3 s after an empty poll: the guard polls again itself
    assert node._pull_and_store_message(receive=lambda: None, get_fab=None) == 7
    assert next(answers, "used up") == "used up"


class _Link:
    """A SuperLink's messages as a held poll sees them: one poll's answer is the list of
    messages pulled (a message is pulled once), ready when its objects are pushed."""

    def __init__(self) -> None:
        import threading

        self.messages: list[str] = []
        self.objects_pushed = False
        self.pulls = 0
        self.pulled_again = threading.Event()
        self.readiness: list[bool] = []

    def pull(self) -> list[str]:
        self.pulls += 1
        if self.pulls > 1:
            self.pulled_again.set()
        answer, self.messages = self.messages, []
        return answer

    def ready(self, answer: list[str]) -> bool:
        self.readiness.append(self.objects_pushed)
        return self.objects_pushed


def test_a_held_poll_is_answered_once_its_message_and_its_objects_are_pushed():
    """The SuperLink holds a poll that finds nothing until a push brings its message,
    then until that message's objects are all there (its receiver would otherwise wait
    a second before asking for them again); the message is pulled once."""
    import threading

    from fedstruct.fl.flower.guard import HeldPolls

    polls, link, answers = HeldPolls(seconds=600), _Link(), []
    held = threading.Thread(target=lambda: answers.append(polls.hold(link.pull, bool, link.ready)))
    held.start()
    link.messages = ["next"]
    polls.pushed()  # the message: pulled again, found, its objects not there yet
    assert link.pulled_again.wait(timeout=60)
    link.objects_pushed = True
    polls.pushed()  # its objects
    held.join(timeout=60)
    assert answers == [["next"]] and link.pulls == 2
    assert link.readiness[-1] is True and not any(link.readiness[:-1])


def test_a_poll_is_held_at_most_its_seconds_and_in_at_most_its_slots():
    from fedstruct.fl.flower.guard import HeldPolls

    link = _Link()
    assert HeldPolls(seconds=0).hold(link.pull, bool, link.ready) == [] and link.pulls == 1
    busy, other = HeldPolls(seconds=600, slots=1), _Link()
    busy._slots.acquire()  # another poll holds the one slot: this one is answered at once
    assert busy.hold(other.pull, bool, other.ready) == [] and other.pulls == 1


def test_a_loopback_cluster_sets_the_poll_intervals_it_is_given(tmp_path, monkeypatch):
    from fedstruct.fl.flower.guard import POLL_INTERVAL_ENV
    from fedstruct.fl.flower.loopback import LoopbackCluster

    monkeypatch.setenv(POLL_INTERVAL_ENV, "2")
    fast = LoopbackCluster(tmp_path / "fast", poll_interval=0.25).env
    assert fast[POLL_INTERVAL_ENV] == "0.25"
    default = LoopbackCluster(tmp_path / "default").env
    assert POLL_INTERVAL_ENV not in default


def test_a_daemon_stops_with_the_process_it_is_told_to_stop_with():
    from fedstruct.fl.flower.guard import STOP_WITH_ENV, stop_with

    assert stop_with({}) is None and stop_with({STOP_WITH_ENV: " "}) is None
    assert stop_with({STOP_WITH_ENV: "4242"}) == 4242
    for bad in ("0", "-3", "me", "1.5"):
        with pytest.raises(ConfigError, match=f"{STOP_WITH_ENV}='{bad}' is not a process ID"):
            stop_with({STOP_WITH_ENV: bad})


#: Owns a loopback cluster with a SuperLink and a SuperNode, prints their PIDs once the
#: node has joined, then waits to be killed.
_OWNER = """
import sys, time
from pathlib import Path
from fedstruct.fl.flower.loopback import LoopbackCluster

cluster = LoopbackCluster(Path(sys.argv[1]))
cluster.superlink("--insecure")
cluster.wait_connected(cluster.supernode(0, "--insecure"))
print(cluster.procs["superlink"].pid, cluster.procs["node0"].pid, flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_a_loopback_cluster_whose_owner_is_killed_stops_by_itself(tmp_path):
    """A SIGKILLed owner runs no cleanup: the SuperLink and the SuperNode (each its own
    session) see their owner gone and stop as on SIGTERM, their warm workers with them."""
    import os
    import signal
    import subprocess
    import sys
    import time

    pytest.importorskip("flwr")
    owner = subprocess.Popen(
        [sys.executable, "-c", _OWNER, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        line = owner.stdout.readline()
        groups = {os.getpgid(int(pid)) for pid in line.split()}
    finally:
        owner.kill()
        owner.wait()
    assert len(groups) == 2, f"the cluster did not start: {line!r}"

    def members() -> list[int]:  # the sessions' processes still running (no zombies)
        found = []
        for entry in Path("/proc").iterdir():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[2]) in groups and fields[0] != "Z":
                found.append(int(entry.name))
        return found

    deadline = time.monotonic() + 120
    while members() and time.monotonic() < deadline:
        time.sleep(0.2)
    left = members()
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"still running after its owner was killed: {left}"
    log = (tmp_path / "superlink.log").read_text()
    assert "Application shutdown complete" in log and "Traceback" not in log, log
    assert "Traceback" not in (tmp_path / "node0.log").read_text()


def test_a_run_status_without_a_superlink_is_one_line(tmp_path, capsys):
    from fedstruct.errors import DeploymentError
    from fedstruct.fl.flower.control import run_status

    address = f"127.0.0.1:{free_port()}"
    with pytest.raises(
        DeploymentError,
        match=rf"^cannot tell a run's status: the SuperLink at {address} does not answer",
    ):
        run_status(Link(address), None, 5)
    assert capsys.readouterr().out == ""  # the CLI's own lines stay out of our output


@pytest.mark.parametrize("command", ["certificates", "control-key", "node-key"])
def test_keys_and_certificates_are_not_replaced_without_overwrite(tmp_path, command):
    """Making keys or certificates where they exist is refused (a new CA invalidates
    every ca.crt handed out), and leaves the files as they were; --overwrite replaces
    them; a folder where the key file goes is named as a folder."""
    target = tmp_path / ("certs" if command == "certificates" else "keys" / Path("coord"))
    assert runner.invoke(app, ["flower", command, str(target)]).exit_code == 0
    written = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    before = {p: p.read_bytes() for p in written}
    text = one_line_error(["flower", command, str(target)])
    assert "already exist" in text and "pass --overwrite to replace them" in text
    if command == "certificates":
        assert "replacing the CA invalidates every ca.crt handed out" in text
    assert {p: p.read_bytes() for p in written} == before  # untouched
    assert runner.invoke(app, ["flower", command, str(target), "--overwrite"]).exit_code == 0
    assert sorted(p for p in tmp_path.rglob("*") if p.is_file()) == written
    assert all(p.read_bytes() != before[p] for p in written)  # new keys, new CA
    if command != "certificates":
        (tmp_path / "folder").mkdir()
        text = one_line_error(["flower", command, str(tmp_path / "folder"), "--overwrite"])
        assert f"{tmp_path / 'folder'} is a folder" in text


def test_a_control_key_that_is_a_folder_and_bad_ports_are_one_line(tmp_path):
    text = one_line_error(["flower", "register", str(tmp_path), "--control-key", str(tmp_path)])
    assert f"public key {tmp_path} is a folder" in text
    make_node_key(tmp_path / "node")
    text = one_line_error(
        ["flower", "register", str(tmp_path / "node.pub"), "--control-key", str(tmp_path)]
    )
    assert f"--control-key {tmp_path} is a folder; give a regular file" in text
    text = one_line_error(
        ["run", "fedavg", "--backend", "flower", "--control-key", str(tmp_path),
         "--out", str(tmp_path / "run")]
    )  # fmt: skip
    assert f"--control-key {tmp_path} is a folder" in text
    text = one_line_error(["flower", "superlink", "--insecure", "--port", "99999"])
    assert "--port 99999 is not a port number; give one from 1 to 65535" in text
    text = one_line_error(["flower", "supernode", "--partition", "0", "--insecure", "--port", "0"])
    assert "--port 0 is not a port number" in text
    text = one_line_error(
        ["flower", "supernode", "--partition", "0", "--insecure", "--superlink", "h:70000"]
    )
    assert "SuperLink address 'h:70000' has port 70000, which is not a port number" in text


def test_a_run_writes_only_inside_the_superlinks_runs_folder(tmp_path):
    from fedstruct.deployment.contract import RUNS_ENV, results_folder
    from fedstruct.errors import DeploymentError

    runs = tmp_path / "runs"
    runs.mkdir()
    env = {RUNS_ENV: str(runs)}
    assert results_folder(str(runs / "a" / "b"), env) == runs / "a" / "b"
    assert results_folder("relative", env) == runs / "relative"
    (runs / "link").symlink_to(tmp_path)
    for out in (str(tmp_path / "elsewhere"), str(runs / ".." / "x"), str(runs / "link" / "x"),
                str(runs), "", "/etc"):  # fmt: skip
        with pytest.raises(DeploymentError, match="is not inside the SuperLink's runs folder"):
            results_folder(out, env)
    with pytest.raises(DeploymentError, match="keeps no runs folder"):
        results_folder(str(runs / "a"), {})


def test_a_wrong_ca_is_named_as_such(tmp_path):
    """A SuperLink whose certificate does not verify against the CA given is reported
    as that, not as a SuperLink that does not run (a TLS server with the SuperLink's
    certificate, in a thread)."""
    import socket
    import ssl
    import threading

    from fedstruct.errors import DeploymentError
    from fedstruct.fl.flower.control import run_status, tls_problem

    right = make_certificates(tmp_path / "right")
    wrong = make_certificates(tmp_path / "wrong")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(right.server_cert, right.server_key)
    server = socket.create_server(("127.0.0.1", 0))
    address = f"127.0.0.1:{server.getsockname()[1]}"
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            try:
                with context.wrap_socket(conn, server_side=True):
                    pass
            except (ssl.SSLError, OSError):
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        assert tls_problem(Link(address, right.ca_cert)) is None
        problem = tls_problem(Link(address, wrong.ca_cert))
        assert problem is not None
        expected = "presented a certificate that does not verify against the CA in"
        assert f"{expected} --root-certificates {wrong.ca_cert}" in problem
        with pytest.raises(DeploymentError, match="does not verify against the CA") as caught:
            run_status(Link(address, wrong.ca_cert), None, 1)
        assert "running" not in str(caught.value)
        (tmp_path / "not-a-cert").write_text("hello\n")
        with pytest.raises(ConfigError, match="is not a PEM certificate"):
            tls_problem(Link(address, tmp_path / "not-a-cert"))
    finally:
        stop.set()
        thread.join()
        server.close()


def test_the_results_call_answers_only_a_token_made_for_it(tmp_path, monkeypatch):
    """The results call on a SuperLink with control keys (guard.results_endpoint on the
    SuperLink's app): a request signed for itself is answered; the same token again (a
    replay), a token made for other arguments, or none, are refused, and the answer
    never runs; the answer's own refusal reaches the caller as its one line."""
    import importlib

    from fastapi.testclient import TestClient
    from google.protobuf.wrappers_pb2 import BytesValue, StringValue

    from fedstruct.errors import DeploymentError
    from fedstruct.fl.flower import adapter
    from fedstruct.fl.flower.control import RESULTS_PATH
    from fedstruct.fl.flower.credentials import (
        call_binding,
        control_token,
        load_control_keys,
        make_control_key,
    )
    from fedstruct.fl.flower.guard import ControlKeyAuthn, results_endpoint

    key, public = make_control_key(tmp_path / "coordinator")
    main = importlib.import_module("flwr.superlink.main")
    extensions = importlib.import_module("flwr.superlink.extensions")
    monkeypatch.setattr(extensions, "configure_app", extensions.configure_app)
    plugin = ControlKeyAuthn(load_control_keys(public))
    monkeypatch.setattr(main, "load_control_authn_plugin", lambda: plugin)
    answered: list[str] = []

    def answer(request: str) -> bytes:
        answered.append(request)
        if "missing" in request:
            raise DeploymentError("the SuperLink keeps no run in its results folder 'missing'")
        return b"files of " + request.encode()

    adapter.add_control_route(RESULTS_PATH, results_endpoint(answer, bound=True))
    client = TestClient(main.create_app())

    def post(request: str, token: str | None):
        body = StringValue(value=request)
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        return client.post(RESULTS_PATH, content=body.SerializeToString(), headers=headers)

    def signed(request: str) -> str:
        return control_token(key, call_binding(StringValue(value=request)))

    token = signed('{"folder": "a"}')
    ok = post('{"folder": "a"}', token)
    assert ok.status_code == 200
    assert BytesValue.FromString(ok.content).value == b'files of {"folder": "a"}'
    assert post('{"folder": "a"}', token).status_code == 401  # a replay
    assert post('{"folder": "b"}', signed('{"folder": "a"}')).status_code == 403  # other args
    assert post('{"folder": "a"}', None).status_code == 401
    assert answered == ['{"folder": "a"}']
    refused = post('{"folder": "missing"}', signed('{"folder": "missing"}'))
    assert adapter.flower_error_reason(refused.text) == (
        "the SuperLink keeps no run in its results folder 'missing'"
    )


def test_fetching_a_run_without_a_superlink_is_one_line(tmp_path):
    address = f"127.0.0.1:{free_port()}"
    text = one_line_error(["flower", "fetch", "5", "--out", str(tmp_path / "x"),
                           "--superlink", address])  # fmt: skip
    assert f"cannot tell a run's status: the SuperLink at {address} does not answer" in text
    assert not (tmp_path / "x").exists()
