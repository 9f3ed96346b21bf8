"""F-CMs on a user's concept table without graph files (issue 31, item 5).

Usage: ``python benchmarks/fcm_site_graphs.py [--seeds 0 1 2] [--model c2bm]
[--input-scaling none federated] [--settings auto hand]``

scikit-learn's breast-cancer data (bundled, no download) as four sites of about 142
rows (a random split, seed 0): four concepts made by cutting four measurements that
go with the diagnosis at their medians (``radius_high`` from mean radius,
``concave_points_high`` from mean concave points, ``texture_high`` from mean texture,
``smoothness_high`` from worst smoothness), the diagnosis as the task, the other 26
measurements as inputs. The same sites run with each source of the concept graph
(``client_graphs``):

- ``given`` without any ``graph:`` file: the empty graph (the behaviour before);
- ``auto`` without any file (the default): each site learns its graph from its rows;
- ``flat``: every concept feeds the task;
- ``hand``: each site's ``graph:`` file holds a hand-made graph (every concept a
  parent of the diagnosis, and radius -> concave points).

Each runs with every ``--input-scaling`` asked (issue 31, item 7: ``none``, raw
inputs as before; ``federated``, the default for files: inputs standardised with the
federated statistics). Printed per setting: the kept model's validation task
accuracy over the sites (the rows each holds out) per seed and their median, the
parents of the task in the aggregated graph, and the majority rate of the diagnosis.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from fedstruct.data.datasets.tables import CONCEPT_CUTS, breast_cancer_concepts
from fedstruct.graphs import Graph, write_graph
from fedstruct.runs.contract import execute

TASK = "diagnosis"


def breast_cancer_sites(folder: Path, n_sites: int = 4, seed: int = 0) -> float:
    """Write the sites' CSV files, a manifest without graphs (``federation.yaml``) and
    one with a hand-made graph per site (``federation-hand.yaml``); return the
    majority rate of the diagnosis."""
    frame = breast_cancer_concepts()
    order = np.random.default_rng(seed).permutation(len(frame))
    sites = []
    for k, part in enumerate(np.array_split(order, n_sites)):
        frame.iloc[np.sort(part)].to_csv(folder / f"site-{k + 1}.csv", index=False)
        sites.append({"name": f"site-{k + 1}", "path": f"site-{k + 1}.csv"})
    concepts = list(CONCEPT_CUTS.values())
    roles = {"task": TASK, "concepts": concepts}
    (folder / "federation.yaml").write_text(yaml.safe_dump({**roles, "sites": sites}))
    hand = Graph.from_edges(
        [*concepts, TASK],
        [*((c, TASK) for c in concepts), ("radius_high", "concave_points_high")],
    )
    write_graph(hand, folder / "hand.json")
    with_graphs = [{**site, "graph": "hand.json"} for site in sites]
    (folder / "federation-hand.yaml").write_text(yaml.safe_dump({**roles, "sites": with_graphs}))
    return float(pd.Series(frame[TASK]).value_counts(normalize=True).max())


SETTINGS = {
    "given": ("given (no file: empty)", "federation.yaml", "given"),
    "auto": ("auto (learned per site)", "federation.yaml", "auto"),
    "flat": ("flat", "federation.yaml", "flat"),
    "hand": ("hand-made graph files", "federation-hand.yaml", "given"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--model", default="c2bm")
    parser.add_argument("--input-scaling", nargs="+", default=["federated"])
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fedstruct-fcm-graphs-") as scratch:
        folder = Path(scratch)
        majority = breast_cancer_sites(folder)
        print(f"majority rate of the diagnosis: {majority:.3f}")
        for key, scaling in ((k, x) for k in args.settings for x in args.input_scaling):
            label, manifest, mode = SETTINGS[key]
            label = f"{label} [{scaling}]"
            scores, parents = [], []
            for seed in args.seeds:
                out = folder / f"run-{mode}-{manifest}-{scaling}-{seed}"
                layer = {"manifest": str(folder / manifest), "client_graphs": mode,
                         "model": args.model, "seed": seed, "input_scaling": scaling}  # fmt: skip
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    execute("fcm", [layer], out)
                metrics = json.loads((out / "metrics.json").read_text())
                scores.append(metrics["val_task_accuracy"])
                parents.append(int(metrics["task_parents"]))
            shown = " ".join(f"{v:.3f}" for v in scores)
            print(
                f"{label:38s} val_task_accuracy {shown} (median "
                f"{statistics.median(scores):.3f}); task parents {parents}"
            )


if __name__ == "__main__":
    main()
