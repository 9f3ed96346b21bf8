"""Deployment commands, credentials and bad input, without starting a cluster."""

from __future__ import annotations

import ipaddress
import json

import pytest

pytest.importorskip("flwr")

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding
from typer.testing import CliRunner

from fedstruct.cli import app
from fedstruct.errors import ConfigError
from fedstruct.experiments.run_folder import prepare_out
from fedstruct.fl.flower.cluster import Link, superlink_command, supernode_command
from fedstruct.fl.flower.credentials import make_certificates, make_node_key
from fedstruct.fl.flower.loopback import free_port

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
    assert f"error: cannot submit to the SuperLink at {address}" in text
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
    from flwr.cli.build import build_fab_from_disk

    from fedstruct.experiments.flower.deploy import write_app
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
    from fedstruct.fl.flower.credentials import (
        TOKEN_LIFETIME,
        control_token,
        load_control_keys,
        make_control_key,
        verify_control_token,
    )
    from fedstruct.fl.flower.guard import ControlKeyAuthn

    key, pub = make_control_key(tmp_path / "coordinator")
    other, other_pub = make_control_key(tmp_path / "other")
    assert key.stat().st_mode & 0o777 == 0o600 and pub.read_text().startswith("ssh-ed25519 ")
    keys = load_control_keys(pub)
    token = control_token(key)
    assert verify_control_token(token, keys) is None
    assert "not among the SuperLink's --control-keys" in verify_control_token(
        control_token(other), keys
    )
    old = control_token(key, now=1e9)
    assert "expired" in verify_control_token(old, keys)
    assert verify_control_token(old, keys, now=1e9 + TOKEN_LIFETIME - 1) is None
    body, _, signature = token.rpartition(".")
    forged = body.replace(body.split(".")[2], str(int(body.split(".")[2]) + 1))
    assert "signature" in verify_control_token(f"{forged}.{signature}", keys)
    assert "not a fedstruct control token" in verify_control_token("abc", keys)
    plugin = ControlKeyAuthn(keys)
    assert plugin.validate_tokens_in_metadata([])[0] is False
    assert plugin.validate_tokens_in_metadata([("flwr-oidc-access-token", token)])[0] is True
    # a file of several keys; a bad line is named
    (tmp_path / "keys").write_text(f"# coordinators\n{pub.read_text()}\n{other_pub.read_text()}")
    assert len(load_control_keys(tmp_path / "keys")) == 2
    (tmp_path / "bad").write_text("ssh-ed25519 AAAA\n")
    with pytest.raises(ConfigError, match=r"line 1 of --control-keys .* is not an Ed25519"):
        load_control_keys(tmp_path / "bad")
    with pytest.raises(ConfigError, match="is not an Ed25519 private key"):
        control_token(pub)


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
    node = importlib.import_module("flwr.supernode.start_client_internal")
    answers = iter([None, None, 7])  # two empty polls, then a message of run 7
    monkeypatch.setattr(node, "_pull_and_store_message", lambda **kwargs: next(answers))
    guard_supernode(0.01)
    # Flower's loop sleeps 3 s after an empty poll: the guard polls again itself
    assert node._pull_and_store_message(receive=lambda: None, get_fab=None) == 7
    assert next(answers, "used up") == "used up"


def test_a_loopback_cluster_sets_the_poll_intervals_it_is_given(tmp_path, monkeypatch):
    from fedstruct.fl.flower.guard import POLL_INTERVAL_ENV
    from fedstruct.fl.flower.loopback import SUPEREXEC_POLL_ENV, LoopbackCluster

    monkeypatch.setenv(POLL_INTERVAL_ENV, "2")
    fast = LoopbackCluster(tmp_path / "fast", poll_interval=0.25).env
    assert fast[POLL_INTERVAL_ENV] == fast[SUPEREXEC_POLL_ENV] == "0.25"
    default = LoopbackCluster(tmp_path / "default").env
    assert POLL_INTERVAL_ENV not in default and SUPEREXEC_POLL_ENV not in default


def test_a_run_status_without_a_superlink_is_one_line(tmp_path, capsys):
    from fedstruct.errors import DeploymentError
    from fedstruct.fl.flower.cluster import run_status, write_connection

    write_connection(tmp_path, Link(f"127.0.0.1:{free_port()}"))
    with pytest.raises(DeploymentError, match=r"^'flwr ls' failed: Connection to the SuperLink"):
        run_status(5, tmp_path)
    assert capsys.readouterr().out == ""  # the CLI's own lines stay out of our output
