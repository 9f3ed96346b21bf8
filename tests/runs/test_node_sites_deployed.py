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
