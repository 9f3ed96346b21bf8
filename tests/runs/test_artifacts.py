"""Every run saves the graphs it learned: JSON, DOT, GraphML and an edges table."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from fedstruct.data import load_network
from fedstruct.graphs import read_graph
from fedstruct.graphs.io import read_graph_with_weights
from fedstruct.runs.contract import execute

FOUR = ("graph.json", "graph.dot", "graph.graphml", "edges.csv")
MODEL = ("model.safetensors", "model.json")


def test_fedcdnv_saves_fedg_and_feddg_in_four_formats(tmp_path):
    network = load_network("asia")
    frame = network.sample(2400, seed=0)
    paths = []
    for k, part in enumerate(np.array_split(np.arange(2400), 3)):
        paths.append(str(tmp_path / f"site-{k}.csv"))
        frame.iloc[part].to_csv(paths[-1], index=False)
    out = tmp_path / "run"
    metrics = execute("fedcdnv", [{"sites": paths}], out).metrics
    artifacts = json.loads((out / "run.json").read_text())["artifacts"]
    definite = ("definite.json", "definite.dot", "definite.graphml", "definite-edges.csv")
    pictures = ["graph.png", "definite.png"]
    assert artifacts == [*FOUR, pictures[0], *definite, pictures[1], *MODEL]
    fedg = read_graph(out / "graph.json")
    assert fedg.n_edges == metrics["edges"] > 0
    assert read_graph(out / "graph.dot") == fedg
    assert read_graph(out / "graph.graphml") == fedg
    table = read_graph(out / "edges.csv")  # the variables on an edge, in order of appearance
    assert table == fedg.restrict(table.names) and table.n_edges == fedg.n_edges
    feddg = read_graph(out / "definite.json")
    assert set(map(str, feddg.edges())) <= set(map(str, fedg.edges())) or feddg.n_edges == 0


def test_fedcd_saves_its_dag_with_edge_beliefs(tmp_path):
    network = load_network("asia")
    paths = []
    for k in range(2):
        parts = [network.sample(400, seed=k).assign(regime="obs")]
        for target in network.names[k::2]:
            rows = network.sample(60, seed=10 + k, interventions={target: "uniform"})
            parts.append(rows.assign(regime=target))
        paths.append(str(tmp_path / f"lab-{k}.csv"))
        pd.concat(parts).to_csv(paths[-1], index=False)
    settings = {"sites": paths, "regime": "regime", "rounds": 2, "epochs_per_round": 1,
                "model_steps": 40, "graph_steps": 8}  # fmt: skip
    out = tmp_path / "run"
    metrics = execute("fedcd", [settings], out).metrics
    dag = read_graph(out / "graph.json")
    assert dag.is_dag() and dag.n_edges == metrics["edges"] > 0
    beliefs = read_graph_with_weights(out / "edges.csv").weights
    assert len(beliefs) == dag.n_edges
    # an edge is kept when both of its parameters are positive: its belief is above 1/4
    assert all(0.25 < p <= 1.0 for p in beliefs.values())
