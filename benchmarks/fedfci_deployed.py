"""fedfci on a loopback deployment: a SuperLink and three SuperNodes that keep their
files, against the same run on the local backend (wall seconds, exchanges, bytes).

Run: ``.venv/bin/python benchmarks/fedfci_deployed.py [--network asia] [--rows 1800]
[--secure]``. The sites' files (one without a column) are written to a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from fedstruct.data import load_network
from fedstruct.fl.flower.loopback import LoopbackCluster
from fedstruct.runs import execute


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--network", default="asia")
    parser.add_argument("--rows", type=int, default=1800)
    parser.add_argument("--secure", action="store_true")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="fedfci-deployed-"))
    network = load_network(args.network)
    frame = network.sample(args.rows, seed=4)
    frame = pd.DataFrame({v: np.array(network.states[v])[frame[v]] for v in network.names})
    paths = []
    for k, part in enumerate(np.array_split(np.arange(args.rows), 3)):
        site = frame.iloc[part]
        if k == 2:
            site = site.drop(columns=[network.names[0]])
        paths.append(root / f"site-{k + 1}.csv")
        site.to_csv(paths[-1], index=False)
    extra = ["--secure-aggregation"] if args.secure else []
    with LoopbackCluster(root / "cluster", poll_interval=0.25, runs=root) as cluster:
        cluster.superlink("--insecure")
        cluster.wait_connected(*(cluster.site_node(p, "--insecure", name=p.stem) for p in paths))
        sites = [a for p in paths for a in ("--node-site", p.stem)]
        start = time.perf_counter()
        result = cluster.fedstruct("run", "fedfci", *sites, *extra, "--quiet", "--backend",
                                   "flower", "--superlink", cluster.address,
                                   "--out", str(root / "deployed"))  # fmt: skip
        deployed_wall = time.perf_counter() - start
        assert result.returncode == 0, result.stderr
    start = time.perf_counter()
    settings = {"sites": [str(p) for p in paths], "secure_aggregation": args.secure}
    execute("fedfci", [settings], root / "local")
    local_wall = time.perf_counter() - start
    deployed = json.loads((root / "deployed" / "metrics.json").read_text())
    local = json.loads((root / "local" / "metrics.json").read_text())
    print(f"deployed: {deployed_wall:.1f} s wall, local: {local_wall:.1f} s wall; "
          f"exchanges {deployed['exchanges']:.0f}, tests {deployed['tests']:.0f}, "
          f"bytes up {deployed['bytes_up']:.0f}; same metrics: {deployed == local}")  # fmt: skip


if __name__ == "__main__":
    main()
