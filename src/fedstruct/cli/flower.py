"""``fedstruct flower ...``: a SuperLink, SuperNodes, their keys and certificates
(docs/deploy.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from fedstruct.errors import ConfigError

if TYPE_CHECKING:  # imported when a command runs, and then only the method it runs
    pass

from fedstruct.cli.app import (
    app,
    bad_input_exits_2,
    err_console,
    out_console,
)

flower_app = typer.Typer(
    help="Run federations across machines on Flower: a SuperLink (the server's machine) "
    "and one SuperNode per institution. See docs/deploy.md.",
    no_args_is_help=True,
)
app.add_typer(flower_app, name="flower")

Home = Annotated[
    Path | None,
    typer.Option(help="FLWR_HOME for Flower's files (default: $FLWR_HOME or ~/.fedstruct/flower)."),
]
Insecure = Annotated[
    bool, typer.Option("--insecure", help="Plain-text connections (loopback tests only).")
]


def _exec(
    cmd: list[str], home: Path, control_keys: Path | None = None, runs: Path | None = None
) -> None:
    """Replace this process by a Flower daemon under fedstruct's guards (its PID stays
    ours; ``control_keys``: the SuperLink's file of control public keys; ``runs``: the
    folder its runs keep their results in)."""
    import os

    from fedstruct.deployment.contract import RUNS_ENV
    from fedstruct.fl.flower.cluster import flower_env, guarded
    from fedstruct.fl.flower.guard import CONTROL_KEYS_ENV

    home.mkdir(parents=True, exist_ok=True)
    env = flower_env(home)
    for name, value in ((CONTROL_KEYS_ENV, control_keys), (RUNS_ENV, runs)):
        env.pop(name, None)
        if value is not None:
            env[name] = str(value.resolve())
    err_console.print(" ".join(cmd), highlight=False, soft_wrap=True)
    cmd = guarded(cmd)
    os.execvpe(cmd[0], cmd, env)


@flower_app.command("superlink")
@bad_input_exits_2
def flower_superlink(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port for SuperNodes and the flwr CLI.")] = 9091,
    certificates: Annotated[
        Path | None,
        typer.Option(
            help="Folder with ca.crt, server.pem, server.key (fedstruct flower certificates)."
        ),
    ] = None,
    insecure: Insecure = False,
    node_auth: Annotated[
        bool, typer.Option("--node-auth", help="Admit only registered SuperNode keys (TLS).")
    ] = False,
    database: Annotated[
        Path | None, typer.Option(help="SQLite file for the state (survives restarts).")
    ] = None,
    control_keys: Annotated[
        Path | None,
        typer.Option(
            help="File of control public keys (KEY.pub lines): only their holders may "
            "submit runs or register nodes. Required with --certificates."
        ),
    ] = None,
    runs: Annotated[
        Path | None,
        typer.Option(
            help="Folder in which each submitted run gets a folder of its own for its "
            "results (created if missing; default: the current folder)."
        ),
    ] = None,
    home: Home = None,
) -> None:
    """Start the SuperLink: the coordinator every SuperNode and submitted run talks to."""
    from fedstruct.fl.flower.cluster import Link, default_home, superlink_command, write_connection
    from fedstruct.fl.flower.credentials import load_control_keys

    runs = Path.cwd() if runs is None else runs
    if runs.exists() and not runs.is_dir():
        raise ConfigError(f"--runs {runs} is not a folder; give the folder runs keep results in")
    if certificates is None and not insecure:
        raise ConfigError("give --certificates DIR for TLS, or --insecure for loopback tests")
    cmd = superlink_command(
        host, port, certificates=certificates, node_auth=node_auth, database=database
    )
    if certificates is not None and control_keys is None:
        raise ConfigError(
            "give --control-keys FILE (public keys from 'fedstruct flower control-key'): "
            "without it anyone who can reach the SuperLink could submit runs"
        )
    if control_keys is not None:
        load_control_keys(control_keys)  # one-line error for a bad file, before starting
    home = home or default_home()
    local = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    write_connection(
        home, Link(f"{local}:{port}", certificates / "ca.crt" if certificates else None)
    )
    runs.mkdir(parents=True, exist_ok=True)
    _exec(cmd, home, control_keys, runs)


@flower_app.command("supernode")
@bad_input_exits_2
def flower_supernode(
    partition: Annotated[
        int | None, typer.Option(help="The partition of a built-in federation this node hosts.")
    ] = None,
    data: Annotated[
        list[str] | None,
        typer.Option(
            help="A data set this node offers: PATH or NAME=PATH (a table, image folder or "
            ".npz; repeatable; NAME defaults to the file's stem); read only here."
        ),
    ] = None,
    manifest: Annotated[
        Path | None,
        typer.Option(
            help="A manifest of the data sets this node offers, and what its catalogue may "
            "say of each (docs/deploy.md, 'What a node offers'); instead of --data."
        ),
    ] = None,
    name: Annotated[
        str | None,
        typer.Option(
            help="The node's site name, which runs give with --node-site (default: the name "
            "of its only data set)."
        ),
    ] = None,
    graph: Annotated[
        Path | None, typer.Option(help="With one --data: the site's own graph file (F-CMs).")
    ] = None,
    superlink: Annotated[str, typer.Option(help="The SuperLink's host:port.")] = "127.0.0.1:9091",
    root_certificates: Annotated[
        Path | None, typer.Option(help="CA certificate of a TLS SuperLink.")
    ] = None,
    insecure: Insecure = False,
    auth_key: Annotated[
        Path | None, typer.Option(help="This node's private key (registered at the SuperLink).")
    ] = None,
    port: Annotated[
        int | None, typer.Option(help="Local runtime port (default 9094 + partition).")
    ] = None,
    wait: Annotated[
        float, typer.Option(help="Seconds to wait for the SuperLink to be reachable.")
    ] = 60.0,
    require_secure_aggregation: Annotated[
        bool,
        typer.Option(
            "--require-secure-aggregation",
            help="Answer a request whose reply the server needs only as a sum (weights, "
            "statistics, scores) only through secure aggregation; refuse it in the clear.",
        ),
    ] = False,
    device: Annotated[
        str | None,
        typer.Option(
            help="Where this node trains torch models: auto, cpu, cuda or cuda:N "
            "(default: the run's --device setting)."
        ),
    ] = None,
    approve: Annotated[
        Path | None,
        typer.Option(
            help="Approval file: the methods (and, optionally, exact settings digests) this "
            "node runs; any other run is refused before any data are read (default: any "
            "run). See 'fedstruct flower approve'."
        ),
    ] = None,
    home: Home = None,
) -> None:
    """Start a SuperNode: for a site's own data sets (--data, --manifest), or a built-in
    partition."""
    from fedstruct.errors import DeploymentError
    from fedstruct.fl.flower.cluster import Link, default_home, supernode_command, wait_reachable
    from fedstruct.fl.flower.control import tls_problem

    if root_certificates is None and not insecure:
        raise ConfigError("give --root-certificates CA.crt for TLS, or --insecure for loopback")
    node_config: dict[str, Any] = dict(_site_node_config(partition, data, manifest, name, graph))
    if require_secure_aggregation:
        from fedstruct.fl.flower.client_app import REQUIRE_SECURE_AGGREGATION

        node_config[REQUIRE_SECURE_AGGREGATION] = True
    if device is not None:
        from fedstruct.fl.device import resolve_device

        resolve_device(device)  # this machine runs the node: refuse a GPU it lacks now
        node_config["device"] = device
    if approve is not None:
        from fedstruct.deployment.approval import APPROVE, read_approval
        from fedstruct.runs.contract import runnable_names

        read_approval(approve, runnable_names())  # one line for a bad file, before starting
        node_config[APPROVE] = str(approve.resolve())
    link = Link(superlink, root_certificates)
    cmd = supernode_command(
        partition,
        link,
        port=9094 + (partition or 0) if port is None else port,
        auth_key=auth_key,
        node_config=node_config,
    )
    wait_reachable(link, wait)
    problem = tls_problem(link)
    if problem is not None:
        raise DeploymentError(problem)
    _exec(cmd, home or default_home())


def _site_node_config(
    partition: int | None,
    data: list[str] | None,
    manifest: Path | None,
    name: str | None,
    graph: Path | None,
) -> dict[str, str]:
    """The node config of a node offering its own data sets (``site``, ``datasets``:
    :class:`~fedstruct.deployment.node.NodeOffer`), checked here; none for a partition."""
    if sum(x is not None and x != [] for x in (partition, data, manifest)) != 1:
        raise ConfigError(
            "give the node's data: --data FILE (the site's own file; NAME=FILE repeated for "
            "several data sets), --manifest FILE or --partition K (a built-in federation), "
            "one of them"
        )
    if partition is not None:
        if name or graph:
            raise ConfigError("--name and --graph describe a site's own file: add --data FILE")
        return {}
    from fedstruct.data.catalogue import read_node_manifest
    from fedstruct.deployment.node import NodeOffer, Offered
    from fedstruct.runs.site_args import parse_site_args

    if manifest is not None:
        specs = read_node_manifest(manifest)
    else:
        specs = parse_site_args(data or [], "--data")
        for spec in specs:
            if not spec.path.exists():
                raise ConfigError(
                    f"--data {spec.path} does not exist; give the path of this site's file"
                )
    if graph is not None:
        if manifest is not None or len(specs) != 1:
            raise ConfigError(
                "--graph goes with one --data file; give each data set its graph in a "
                "--manifest (graph: FILE)"
            )
        if not graph.exists():
            raise ConfigError(f"--graph {graph} does not exist; give the path of this site's file")
    if name is None and len(specs) > 1:
        raise ConfigError(
            f"this node offers several data sets ({', '.join(s.name for s in specs)}): give "
            "it a site name, --name SITE (runs name it with --node-site SITE:DATASET)"
        )
    offered = tuple(
        Offered(
            spec.name,
            str(spec.path.resolve()),
            str(graph.resolve()) if graph else str(spec.options.get("graph", "")),
            tuple(spec.options.get("share", ())),
        )
        for spec in specs
    )
    return NodeOffer(name or specs[0].name, offered).to_config()


ReplaceKeys = Annotated[
    bool,
    typer.Option("--overwrite", help="Replace files that exist (see docs/deploy.md first)."),
]
SuperlinkAddress = Annotated[str, typer.Option("--superlink", help="The SuperLink's host:port.")]
RootCertificates = Annotated[Path | None, typer.Option(help="CA certificate of the TLS SuperLink.")]
ControlKey = Annotated[Path | None, typer.Option(help="Private control key the SuperLink accepts.")]


def _control_link(
    superlink: str, root_certificates: Path | None, control_key: Path | None
) -> tuple[Any, Path | None]:
    """The SuperLink to call and the control key that signs (checked: one-line errors)."""
    from fedstruct.fl.flower.cluster import Link
    from fedstruct.fl.flower.credentials import load_control_key

    if control_key is not None:
        load_control_key(control_key)
    return Link(superlink, root_certificates), control_key


@flower_app.command("register")
@bad_input_exits_2
def flower_register(
    public_key: Annotated[Path, typer.Argument(help="A SuperNode's public key (NAME.pub).")],
    superlink: SuperlinkAddress = "127.0.0.1:9091",
    root_certificates: RootCertificates = None,
    control_key: ControlKey = None,
) -> None:
    """Admit a SuperNode: register its public key at a SuperLink started with --node-auth."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    from fedstruct.files import read_bytes
    from fedstruct.fl.flower.control import register_node

    data = read_bytes(public_key, "public key", limit=1024 * 1024)
    try:
        loaded = serialization.load_ssh_public_key(data.strip())
    except (ValueError, TypeError):
        loaded = None
    if not isinstance(loaded, ec.EllipticCurvePublicKey):
        raise ConfigError(
            f"public key {public_key} is not a SuperNode's public key (an OpenSSH ECDSA "
            "line, e.g. NAME.pub from 'fedstruct flower node-key NAME')"
        )
    link, key = _control_link(superlink, root_certificates, control_key)
    node_id = register_node(link, key, data.strip())
    out_console.print(f"registered {public_key.name}: SuperNode id {node_id}")


@flower_app.command("unregister")
@bad_input_exits_2
def flower_unregister(
    node_id: Annotated[int, typer.Argument(help="The SuperNode id 'register' printed.")],
    superlink: SuperlinkAddress = "127.0.0.1:9091",
    root_certificates: RootCertificates = None,
    control_key: ControlKey = None,
) -> None:
    """Revoke a SuperNode's key: the SuperLink refuses the node from now on."""
    from fedstruct.fl.flower.control import unregister_node

    link, key = _control_link(superlink, root_certificates, control_key)
    unregister_node(link, key, node_id)
    out_console.print(f"unregistered SuperNode {node_id}")


@flower_app.command("fetch")
@bad_input_exits_2
def flower_fetch(
    run_id: Annotated[
        int, typer.Argument(metavar="RUN", help="The run id 'fedstruct run' printed (flower_run).")
    ],
    out: Annotated[Path, typer.Option(help="Folder to bring the run's results into.")],
    superlink: SuperlinkAddress = "127.0.0.1:9091",
    root_certificates: RootCertificates = None,
    control_key: ControlKey = None,
    overwrite: Annotated[
        bool,
        typer.Option("--overwrite", help="Replace another run in --out (only the files it wrote)."),
    ] = False,
) -> None:
    """Bring a deployed run's results (config, metrics, history, graph, model, plots)
    from the SuperLink into --out: 'fedstruct show', 'predict' and 'run --resume' then
    work there. The run's own folder is brought up to date."""
    from fedstruct.deployment.submit import fetch_run
    from fedstruct.fl.flower.cluster import DeploymentOptions

    _control_link(superlink, root_certificates, control_key)
    options = DeploymentOptions(
        superlink=superlink,
        root_certificates=str(root_certificates.resolve()) if root_certificates else None,
        control_key=str(control_key.resolve()) if control_key else None,
    )
    fetched = fetch_run(run_id, out, options, overwrite=overwrite)
    status = fetched.record.get("status", "?")
    out_console.print(
        f"fetched run {run_id} ({status}): {len(fetched.files)} files, "
        f"{fetched.size / 1e6:.1f} MB into {out}"
    )


@flower_app.command("certificates")
@bad_input_exits_2
def flower_certificates(
    folder: Annotated[Path, typer.Argument(help="Where to write ca.crt, server.pem, keys.")],
    host: Annotated[
        list[str] | None,
        typer.Option(help="Host name or IP of the SuperLink (repeatable; 127.0.0.1 is added)."),
    ] = None,
    overwrite: ReplaceKeys = False,
) -> None:
    """Make a CA and the SuperLink's TLS certificate (give ca.crt to every institution).
    Existing files are kept unless --overwrite: a new CA invalidates every ca.crt handed
    out."""
    from fedstruct.fl.flower.credentials import make_certificates

    hosts = ["127.0.0.1", *[h for h in host or [] if h != "127.0.0.1"]]
    made = make_certificates(folder, hosts, overwrite=overwrite)
    out_console.print(f"wrote {made.ca_cert}, {made.server_cert} and their keys for {hosts}")


@flower_app.command("control-key")
@bad_input_exits_2
def flower_control_key(
    path: Annotated[Path, typer.Argument(help="Private key file to write (PATH.pub is added).")],
    overwrite: ReplaceKeys = False,
) -> None:
    """Make a control key pair: PATH signs runs and registrations; PATH.pub goes into the
    SuperLink's --control-keys file. An existing pair is kept unless --overwrite."""
    from fedstruct.fl.flower.credentials import make_control_key

    private, public = make_control_key(path, overwrite=overwrite)
    out_console.print(f"wrote {private} (keep it secret) and {public} (for --control-keys)")


@flower_app.command("node-key")
@bad_input_exits_2
def flower_node_key(
    path: Annotated[Path, typer.Argument(help="Private key file to write (PATH.pub is added).")],
    overwrite: ReplaceKeys = False,
) -> None:
    """Make a SuperNode key pair; send only PATH.pub to the SuperLink's operator. An
    existing pair is kept unless --overwrite (the new one must be registered again)."""
    from fedstruct.fl.flower.credentials import make_node_key

    private, public = make_node_key(path, overwrite=overwrite)
    out_console.print(f"wrote {private} (keep it) and {public} (register it)")


@flower_app.command("approve")
@bad_input_exits_2
def flower_approve(
    method: Annotated[
        str | None, typer.Argument(help="The method to approve (its settings: --config, --set).")
    ] = None,
    config_file: Annotated[
        Path | None, typer.Option("--config", help="YAML/JSON file of the run's settings.")
    ] = None,
    assignments: Annotated[
        list[str] | None,
        typer.Option("--set", metavar="KEY=VALUE", help="One setting of the run (repeatable)."),
    ] = None,
    node_site: Annotated[
        list[str] | None,
        typer.Option("--node-site", help="A site of the run, as 'fedstruct run' names it."),
    ] = None,
    run: Annotated[
        Path | None,
        typer.Option("--run", help="A prepared run's folder (its config.json), instead of METHOD."),
    ] = None,
) -> None:
    """Print the settings digest of a run and the line that approves it in a node's
    --approve file: for METHOD with the settings 'fedstruct run' would be given, or
    for the run a folder's config.json holds."""
    from fedstruct.deployment.approval import BACKEND, approval_line
    from fedstruct.runs.digest import settings_digest

    if (method is None) == (run is None):
        raise ConfigError(
            "give METHOD (with its settings: --config, --set, --node-site) or --run DIR "
            "(a prepared run's folder), one of them"
        )
    if run is not None:
        from fedstruct.runs.contract import read_config

        if config_file or assignments or node_site:
            raise ConfigError("--run takes the settings from the run's config.json; give no other")
        config = read_config(run)
        method, settings = str(config["method"]), config["settings"]
    else:
        from fedstruct.runs.contract import runnable
        from fedstruct.runs.inputs import absolute_paths
        from fedstruct.runs.settings import (
            apply_settings,
            load_config_file,
            parse_assignments,
            settings_dict,
        )

        entry = runnable(str(method))
        layers = [
            load_config_file(config_file) if config_file else {},
            {"node_sites": list(node_site)} if node_site else {},
            parse_assignments(assignments or []),
        ]
        resolved = absolute_paths(apply_settings(entry.settings(), *layers, method=entry.name))
        method, settings = entry.name, settings_dict(resolved)
    digest = settings_digest(method, settings, BACKEND)
    out_console.print(f"{method} settings digest: {digest}", highlight=False, soft_wrap=True)
    out_console.print(
        "approve exactly these settings on a node: add this line under 'approve:' in its "
        "--approve file (or the line '" + approval_line(method) + "' for any settings):",
        highlight=False,
        soft_wrap=True,
    )
    out_console.print(f"  {approval_line(method, digest)}", highlight=False, soft_wrap=True)


@flower_app.command("catalogue")
@bad_input_exits_2
def flower_catalogue(
    out: Annotated[
        Path,
        typer.Option(
            help="Folder on this machine for catalogue.json (fetched back from the SuperLink)."
        ),
    ],
    superlink: SuperlinkAddress = "127.0.0.1:9091",
    root_certificates: RootCertificates = None,
    control_key: ControlKey = None,
    min_nodes: Annotated[
        int, typer.Option(help="Wait until this many SuperNodes are connected (0: those that are).")
    ] = 0,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace the catalogue already in --out.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress display.")] = False,
) -> None:
    """List what each connected SuperNode offers, before any run: its data sets, their
    columns, kinds and rows, and only the statistics each data set's owner allows."""
    from fedstruct.deployment.catalogue import catalogue_lines, request_catalogue
    from fedstruct.fl.flower.cluster import DeploymentOptions

    if min_nodes < 0:
        raise ConfigError(f"--min-nodes {min_nodes} must be 0 or more")
    key = control_key.resolve() if control_key else None
    options = DeploymentOptions(
        superlink=superlink,
        root_certificates=str(root_certificates) if root_certificates else None,
        min_nodes=min_nodes,
        control_key=str(key) if key else None,
    )
    _control_link(superlink, root_certificates, control_key)  # one line for a bad key file
    nodes = request_catalogue(out, options, overwrite=overwrite, progress=not quiet)
    for line in catalogue_lines(nodes):
        out_console.print(line, highlight=False, soft_wrap=True, markup=False)
