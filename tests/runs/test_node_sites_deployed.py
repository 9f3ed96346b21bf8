"""A real deployment whose sites keep their files: a loopback SuperLink and three
SuperNodes, each started with its own CSV (`fedstruct flower supernode --data`).

Every process of a node (the SuperNode and the app processes Flower starts for it)
and of the SuperLink logs the site files it opens, through an audit hook installed
by a ``sitecustomize`` module on their PYTHONPATH: each node opens its own file
only, the SuperLink none, and the result equals the local backend's on the files.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("flwr")

from fedstruct.data import load_network
from fedstruct.fl.flower.loopback import LoopbackCluster
from fedstruct.runs import execute

pytestmark = [pytest.mark.slow, pytest.mark.deploy]

SETTINGS = {"target": "dysp", "test_fraction": 0.2, "rounds": 1}

AUDIT = """
import os, sys
_log, _root = os.environ.get("AUDIT_LOG"), os.environ.get("AUDIT_ROOT")
if _log and _root:
    _fd = os.open(_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    def _hook(event, args):
        if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
            path = os.path.abspath(os.fsdecode(args[0]))
            if path.startswith(_root):
                os.write(_fd, (path + "\\n").encode())
    sys.addaudithook(_hook)
"""


def test_three_nodes_each_read_only_their_own_file(tmp_path):
    data = tmp_path / "sites"
    data.mkdir()
    network = load_network("asia")
    frame = network.sample(1500, seed=0)
    frame = pd.DataFrame({v: np.array(network.states[v])[frame[v]] for v in network.names})
    paths = []
    for k, part in enumerate(np.array_split(np.arange(1500), 3)):
        paths.append(data / f"site-{k + 1}.csv")
        frame.iloc[part].to_csv(paths[-1], index=False)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(AUDIT)

    def audited(name: str) -> dict[str, str]:
        path = os.pathsep.join([str(hooks), os.environ.get("PYTHONPATH", "")])
        return {"PYTHONPATH": path, "AUDIT_LOG": str(tmp_path / f"{name}.opened"),
                "AUDIT_ROOT": str(data.resolve())}  # fmt: skip

    settings = [*(a for k, v in SETTINGS.items() for a in ("--set", f"{k}={v}")), "--quiet"]
    # nodes and SuperExecs poll every 0.25 s, not Flower's 3 s and 1 s: shorter exchanges
    with LoopbackCluster(tmp_path / "cluster", poll_interval=0.25, runs=tmp_path) as cluster:
        cluster.superlink("--insecure", env=audited("superlink"))
        cluster.wait_connected(
            *(cluster.site_node(p, "--insecure", name=p.stem, env=audited(p.stem)) for p in paths)
        )
        out = tmp_path / "deployed"
        sites = [a for p in paths for a in ("--node-site", p.stem)]
        result = cluster.fedstruct("run", "fedavg", *sites, *settings, "--backend", "flower",
                                   "--superlink", cluster.address, "--out", str(out))  # fmt: skip
        assert result.returncode == 0, result.stdout + result.stderr + cluster.log("superlink")
    local = tmp_path / "local"  # in this process: the same settings, the files at hand
    execute("fedavg", [{"sites": [str(p) for p in paths], **SETTINGS}], local)
    deployed = json.loads((out / "metrics.json").read_text())
    assert deployed == json.loads((local / "metrics.json").read_text())
    for path in paths:
        opened = set((tmp_path / f"{path.stem}.opened").read_text().split())
        assert opened == {str(path.resolve())}
    server = tmp_path / "superlink.opened"
    assert not server.exists() or not server.read_text().strip()


def test_pooled_discovery_on_deployed_sites_is_the_local_run(tmp_path):
    """fedfci on three SuperNodes that keep their files, one of them without a column
    and with missing values: every batch of statistics is summed over the nodes, and
    the graph, p-values and metrics equal the local backend's on the same files."""
    data = tmp_path / "sites"
    data.mkdir()
    network = load_network("asia")
    frame = network.sample(1800, seed=4)
    frame = pd.DataFrame({v: np.array(network.states[v])[frame[v]] for v in network.names})
    paths = []
    for k, part in enumerate(np.array_split(np.arange(1800), 3)):
        site = frame.iloc[part].copy()
        if k == 2:
            site = site.drop(columns=["asia"])
            site.loc[site.index[::7], "smoke"] = ""
        paths.append(data / f"site-{k + 1}.csv")
        site.to_csv(paths[-1], index=False)
    with LoopbackCluster(tmp_path / "cluster", poll_interval=0.25, runs=tmp_path) as cluster:
        cluster.superlink("--insecure")
        cluster.wait_connected(*(cluster.site_node(p, "--insecure", name=p.stem) for p in paths))
        out = tmp_path / "deployed"
        sites = [a for p in paths for a in ("--node-site", p.stem)]
        result = cluster.fedstruct("run", "fedfci", *sites, "--quiet", "--backend", "flower",
                                   "--superlink", cluster.address, "--out", str(out))  # fmt: skip
        assert result.returncode == 0, result.stdout + result.stderr + cluster.log("superlink")
    local = tmp_path / "local"
    execute("fedfci", [{"sites": [str(p) for p in paths]}], local)
    deployed = json.loads((out / "metrics.json").read_text())
    assert deployed == json.loads((local / "metrics.json").read_text())
    assert deployed["exchanges"] >= 2 and deployed["undecided_pairs"] == 0.0
    assert (out / "graph.json").read_text() == (local / "graph.json").read_text()


def test_nodes_offer_named_data_sets_that_a_catalogue_lists(tmp_path):
    """Two nodes offer named data sets (one by --data NAME=PATH twice, one by a manifest
    that shares level names): the catalogue lists both nodes' offers as each node
    describes them (no row; a data set too small to describe named with the reason);
    a run naming a data set a node does not offer stops in one line (exit 2); a run
    naming one per node uses it, with the local backend's result on those files."""
    from fedstruct.deployment.catalogue import describe_offer
    from fedstruct.deployment.node import NodeOffer, Offered
    from fedstruct.fl.flower.loopback import free_port

    data = tmp_path / "sites"
    data.mkdir()
    network = load_network("asia")
    frame = network.sample(1006, seed=2)
    frame = pd.DataFrame({v: np.array(network.states[v])[frame[v]] for v in network.names})
    admissions, other, small = data / "admissions.csv", data / "ward-b.csv", data / "small.csv"
    frame.iloc[:500].to_csv(admissions, index=False)
    frame.iloc[500:1000].to_csv(other, index=False)
    frame.iloc[1000:].to_csv(small, index=False)
    manifest = data / "ward-b.yaml"
    manifest.write_text("sites:\n  - path: ward-b.csv\n    name: wards\n    share: [levels]\n")

    def node(name: str, *args: str) -> str:
        cluster.start(name, "flower", "supernode", *args, "--name", name, "--superlink",
                      cluster.address, "--port", str(free_port()), "--insecure")  # fmt: skip
        return name

    settings = [*(a for k, v in SETTINGS.items() for a in ("--set", f"{k}={v}")), "--quiet"]
    with LoopbackCluster(tmp_path / "cluster", poll_interval=0.25, runs=tmp_path) as cluster:
        cluster.superlink("--insecure")
        cluster.wait_connected(
            node("ward-a", "--data", f"admissions={admissions}", "--data", f"small={small}"),
            node("ward-b", "--manifest", str(manifest)),
        )
        link = ["--superlink", cluster.address]
        listed = cluster.fedstruct(
            "flower", "catalogue", *link, "--quiet", "--out", str(tmp_path / "catalogue")
        )
        assert listed.returncode == 0, listed.stderr + cluster.log("superlink")
        run = ["run", "fedavg", *settings, "--backend", "flower", *link, "--node-site"]
        unknown = cluster.fedstruct(
            *run, "ward-a:nope", "--node-site", "ward-b", "--out", str(tmp_path / "x")
        )
        out = tmp_path / "deployed"
        chosen = cluster.fedstruct(
            *run, "ward-a:admissions", "--node-site", "ward-b", "--out", str(out)
        )
    nodes = json.loads((tmp_path / "catalogue" / "catalogue.json").read_text())["nodes"]
    offers = [
        NodeOffer("ward-a", (Offered("admissions", str(admissions)), Offered("small", str(small)))),
        NodeOffer("ward-b", (Offered("wards", str(other), share=("levels",)),)),
    ]
    assert nodes == [{"node": o.name, "datasets": describe_offer(o)} for o in offers]
    first, too_small = nodes[0]["datasets"]
    assert first["n_rows"] == 500 and first["columns"] == list(network.names)
    assert not any(key.startswith("levels.") for key in first)  # the default: none
    assert too_small["error"].startswith("SampleSizeError: site 'small' has 6 rows")
    assert nodes[1]["datasets"][0]["levels.smoke"] == ["no", "yes"]
    lines = listed.stdout.splitlines()
    assert lines[:2] == ["ward-a: 2 data sets", "  admissions: table, 500 rows, 8 columns"]
    assert "ward-b: 1 data set" in lines and "    smoke: categorical; levels no, yes" in lines
    assert unknown.returncode == 2, unknown.stderr
    assert unknown.stderr.strip().splitlines()[-1] == (
        "error: SuperNode 'ward-a' offers no data set 'nope'; it offers admissions, small: fix "
        "--node-site ward-a:DATASET ('fedstruct flower catalogue' lists what each node offers)"
    )
    assert chosen.returncode == 0, chosen.stderr
    local = tmp_path / "local"
    execute("fedavg", [{"sites": [f"ward-a={admissions}", f"ward-b={other}"], **SETTINGS}], local)
    deployed = json.loads((out / "metrics.json").read_text())
    assert deployed == json.loads((local / "metrics.json").read_text())
