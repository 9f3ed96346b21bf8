"""Sites that keep their files on their own nodes: the deployment's handshake in one process.

For every method, the handshake's steps (:mod:`fedstruct.runs.node_sites`) are
run as a deployment runs them — each site's node describes and encodes only its own
file, the server sees the merged schema and the nodes' reports — and the result is
compared with the local backend's on the same files. An audit hook records every file
each step opens: a node opens its own file only, the server none.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedstruct.data import load_network
from fedstruct.data.sites import SiteSpec
from fedstruct.errors import (
    ConfigError,
    DataError,
    PrivacyViolationError,
    SampleSizeError,
    UnknownVariableError,
)
from fedstruct.fl import LocalBackend
from fedstruct.runs.contract import execute, run_resolved, runnable
from fedstruct.runs.node_sites import build_own, describe, merge
from fedstruct.runs.settings import apply_settings
from fedstruct.runs.source import server_view

_OPENED: list[list[str]] = []


def _audit(event: str, args: tuple) -> None:
    if event == "open" and _OPENED and isinstance(args[0], str | Path):
        _OPENED[-1].append(str(Path(args[0]).resolve()))


sys.addaudithook(_audit)


@contextmanager
def opened() -> Iterator[list[str]]:
    """The files opened inside the block."""
    _OPENED.append([])
    try:
        yield _OPENED[-1]
    finally:
        _OPENED.pop()


class NodesBackend(LocalBackend):
    """The server knows the clients' names only; each client was built on its node."""

    needs_client_data = False

    def __init__(self, clients) -> None:
        self.clients = clients

    def run(self, server_fn, method, clients, participation, seed):
        assert list(clients) == [c.name for c in self.clients]
        return super().run(server_fn, method, self.clients, participation, seed)


def deployed(name: str, settings: dict, paths: list[Path], out: Path) -> dict:
    """Run ``name`` as a deployment with node-local files; check who opens what."""
    entry = runnable(name)
    specs = [SiteSpec(p.name.split(".")[0], p) for p in paths]
    resolved = apply_settings(
        entry.settings(), {**settings, "node_sites": [s.name for s in specs]}, method=name
    )
    descriptions, built = [], []
    for spec in specs:
        with opened() as files:
            descriptions.append(describe(entry, resolved, spec))
        assert _site_files(files, paths) <= {str(spec.path.resolve())}, files
    schema = merge(entry, resolved, json.loads(json.dumps(descriptions)))  # as sent
    for spec in specs:
        with opened() as files:
            built.append(build_own(entry, resolved, spec, json.loads(json.dumps(schema))))
        assert _site_files(files, paths) == {str(spec.path.resolve())}, files
    reports = {s.name: r for s, (_, _, r) in zip(specs, built, strict=True)}
    view = server_view(resolved, schema, reports)
    with opened() as files:
        outcome = run_resolved(
            entry, resolved, out, NodesBackend([c for _, c, _ in built]), view=view
        )
    assert not _site_files(files, paths), files
    return outcome.metrics


def _site_files(files: list[str], paths: list[Path]) -> set[str]:
    roots = [str(p.resolve()) for p in paths]
    return {f for f in files if any(f == r or f.startswith(r + "/") for r in roots)}


def local(name: str, settings: dict, paths: list[Path], out: Path) -> dict:
    sites = {"sites": [str(p) for p in paths]}
    return execute(name, [settings, sites], out).metrics


def compare(local_metrics: dict, node_metrics: dict) -> None:
    """The same metrics, equal (held-out scores too: each site computes them)."""
    assert set(node_metrics) == set(local_metrics)
    for key, value in node_metrics.items():
        assert value == pytest.approx(local_metrics[key], rel=1e-9, abs=1e-12), key


def asia_files(folder: Path, rows: int = 500, text: bool = True) -> list[Path]:
    network = load_network("asia")
    frame = network.sample(rows * 3, seed=0)
    if text:
        frame = pd.DataFrame(
            {v: np.array(network.states[v])[frame[v].to_numpy()] for v in network.names}
        )
    paths = []
    for k, part in enumerate(np.array_split(np.arange(len(frame)), 3)):
        path = folder / f"site-{k + 1}.csv"
        frame.iloc[part].to_csv(path, index=False)
        paths.append(path)
    return paths


def test_fedavg(tmp_path):
    paths = asia_files(tmp_path)
    settings = {"target": "dysp", "test_fraction": 0.2, "rounds": 3}
    mine = deployed("fedavg", settings, paths, tmp_path / "node")
    compare(local("fedavg", settings, paths, tmp_path / "local"), mine)
    assert mine["rows_site-1"] == 500 and mine["test_accuracy"] > 0.6


def test_fedcdnv_sites_with_different_columns(tmp_path):
    paths = asia_files(tmp_path, rows=800)
    for path, drop in zip(paths, (["asia"], ["xray"], []), strict=True):
        pd.read_csv(path).drop(columns=drop).to_csv(path, index=False)
    mine = deployed("fedcdnv", {}, paths, tmp_path / "node")
    compare(local("fedcdnv", {}, paths, tmp_path / "local"), mine)
    assert mine["n_variables"] == 8 and mine["edges"] > 0


def test_fedcd_regime_column(tmp_path):
    network = load_network("asia")
    paths = []
    for k in range(2):
        parts = [network.sample(400, seed=k).assign(regime="obs")]
        for target in network.names[k::2]:
            rows = network.sample(60, seed=10 + k, interventions={target: "uniform"})
            parts.append(rows.assign(regime=target))
        frame = pd.concat(parts)
        if k:  # the second lab orders its columns otherwise
            frame = frame[list(reversed(frame.columns))]
        paths.append(tmp_path / f"lab-{k}.csv")
        frame.to_csv(paths[-1], index=False)
    settings = {"regime": "regime", "rounds": 2, "epochs_per_round": 1, "model_steps": 40,
                "graph_steps": 8}  # fmt: skip
    mine = deployed("fedcd", settings, paths, tmp_path / "node")
    compare(local("fedcd", settings, paths, tmp_path / "local"), mine)
    assert mine["edges"] >= 1


def test_fedcd_continuous_columns_are_binned_across_the_nodes(tmp_path):
    """Each node holds only its own rows; the bins' exchange (summaries, then counts
    over the shared grid) gives every node the cuts the local run computes."""
    network = load_network("asia")
    rng = np.random.default_rng(0)
    paths = []
    for k in range(2):
        parts = [network.sample(200, seed=k).assign(regime="obs")]
        for target in network.names[k::2]:
            rows = network.sample(30, seed=10 + k, interventions={target: "uniform"})
            parts.append(rows.assign(regime=target))
        frame = pd.concat(parts)
        level = 80.0 * frame["either"].to_numpy() + rng.normal(20.0 * k, 25.0, len(frame))
        level[:2] = np.nan
        frame.insert(0, "level", level)
        paths.append(tmp_path / f"lab-{k}.csv")
        frame.to_csv(paths[-1], index=False)
    settings = {"regime": "regime", "rounds": 1, "epochs_per_round": 1, "model_steps": 10,
                "graph_steps": 2, "graphs_per_step": 5, "bins": 3}  # fmt: skip
    mine = deployed("fedcd", settings, paths, tmp_path / "node")
    compare(local("fedcd", settings, paths, tmp_path / "local"), mine)
    assert mine["bins_max"] == 3 and mine["dropped_rows_lab-0"] == 2
    cuts = [(tmp_path / run / "bins.csv").read_text() for run in ("node", "local")]
    assert cuts[0] == cuts[1] and cuts[0].startswith("column,bins,cut_1,cut_2\nlevel,3,")


def test_fcm_concepts_and_task(tmp_path):
    network = load_network("asia")
    rows = network.sample(900, seed=0)
    concepts = ["tub", "smoke", "lung", "bronc", "either"]
    noise = np.random.default_rng(0).normal(scale=0.3, size=(900, len(concepts)))
    x = pd.DataFrame(rows[concepts].to_numpy() + noise, columns=[f"x{i}" for i in range(5)])
    frame = pd.concat([x, rows[[*concepts, "dysp"]]], axis=1)
    paths = []
    for k, part in enumerate(np.array_split(np.arange(900), 3)):
        paths.append(tmp_path / f"h{k}.csv")
        frame.iloc[part].to_csv(paths[-1], index=False)
    settings = {"task": "dysp", "concepts": concepts, "rounds": 2, "clients_per_round": 3}
    mine = deployed("fcm", settings, paths, tmp_path / "node")
    compare(local("fcm", settings, paths, tmp_path / "local"), mine)
    assert mine["concepts"] == 5


def test_fedngm_mixed_columns(tmp_path):
    rng = np.random.default_rng(0)
    paths = []
    for k in range(3):
        a = rng.normal(size=300)
        b = 2 * a + rng.normal(scale=0.5, size=300)
        group = np.where(a + rng.normal(size=300) > 0, "hi", "lo")
        frame = pd.DataFrame({"a": a, "b": b, "group": group})
        paths.append(tmp_path / f"s{k}.csv")
        frame.to_csv(paths[-1], index=False)
    settings = {"rounds": 2, "epochs": 3, "fidelity_samples": 50}
    mine = deployed("fedngm", settings, paths, tmp_path / "node")
    theirs = local("fedngm", settings, paths, tmp_path / "local")
    compare(theirs, mine)
    assert mine["common_variables"] == 3
    assert {"global_own_ratio_s0", "global_own_ratio_s1", "worst_own_ratio"} <= set(mine)


def test_cafe_image_sites(tmp_path):
    rng = np.random.default_rng(0)
    paths = []
    for k in range(2):
        labels = np.array(["cat", "dog"] * 20 if k else ["cat", "dog", "owl"] * 14)
        images = rng.integers(0, 255, size=(len(labels), 8, 8), dtype=np.uint8)
        images[labels == "dog", :4] = 255  # something to learn
        paths.append(tmp_path / f"clinic-{k}.npz")
        np.savez(paths[-1], images=images, labels=labels)
    settings = {"rounds": 2, "local_epochs": 1, "test_fraction": 0.25}
    mine = deployed("cafe", settings, paths, tmp_path / "node")
    theirs = local("cafe", settings, paths, tmp_path / "local")
    compare(theirs, mine)
    assert mine["classes"] == 3 and mine["images_clinic-1"] == 40
    # each site scored the final model on its 25 % held-out images
    assert {"accuracy", "accuracy_clinic-0", "accuracy_clinic-1"} <= set(mine)


def test_cafe_table_sites(tmp_path):
    """A mixed table with holes: the statistics step and the held-out scores reach the
    same numbers when each node reads only its own file."""
    rng = np.random.default_rng(0)
    paths = []
    for k in range(2):
        n = 40
        age = rng.normal(50, 10, n)
        frame = pd.DataFrame({"ward": rng.choice(["a", "b"], n), "age": age,
                              "y": np.where(age > 50, "sick", "well")})  # fmt: skip
        frame.loc[rng.random(n) < 0.1, "age"] = np.nan
        paths.append(tmp_path / f"h-{k}.csv")
        frame.to_csv(paths[-1], index=False)
    settings = {"rounds": 2, "local_epochs": 1, "test_fraction": 0.25, "target": "y",
                "sample_rate": 1.0, "feature_dim": 8}  # fmt: skip
    mine = deployed("cafe", settings, paths, tmp_path / "node")
    theirs = local("cafe", settings, paths, tmp_path / "local")
    compare(theirs, mine)
    assert mine["columns_continuous"] == 1 and {"accuracy_h-0", "accuracy_h-1"} <= set(mine)


def test_a_nodes_bad_file_is_named_at_its_node(tmp_path):
    paths = asia_files(tmp_path, rows=200)
    frame = pd.read_csv(paths[1])
    frame.loc[:4, "smoke"] = np.nan
    frame.to_csv(paths[1], index=False)
    entry = runnable("fedavg")
    sites = {"target": "dysp", "node_sites": ["site-1", "site-2", "site-3"], "missing": "error"}
    settings = apply_settings(entry.settings(), sites, method="fedavg")
    specs = [SiteSpec(p.stem, p) for p in paths]
    schema = merge(entry, settings, [describe(entry, settings, s) for s in specs])
    build_own(entry, settings, specs[0], schema)
    with pytest.raises(DataError, match=r"5 missing values in column 'smoke' of site 'site-2'"):
        build_own(entry, settings, specs[1], schema)


def test_the_handshake_refuses_a_description_that_discloses_too_much(tmp_path):
    paths = asia_files(tmp_path, rows=40)
    frame = pd.read_csv(paths[1])
    frame.insert(0, "patient", [f"P{i:04d}" for i in range(len(frame))])
    frame.to_csv(paths[1], index=False)
    entry = runnable("fedavg")
    sites = {"target": "dysp", "node_sites": ["site-1", "site-2", "site-3"]}
    settings = apply_settings(entry.settings(), sites, method="fedavg")
    specs = [SiteSpec(p.stem, p) for p in paths]
    assert describe(entry, settings, specs[0])["n_rows"] == 40
    with pytest.raises(DataError, match=r"column 'patient' of site 'site-2' .* identifier"):
        describe(entry, settings, specs[1])
    few = apply_settings(entry.settings(), {**sites, "min_site_rows": 41}, method="fedavg")
    with pytest.raises(SampleSizeError, match=r"site .site-1. .* has 40 rows, fewer than the 41"):
        describe(entry, few, specs[0])


def test_a_node_never_describes_free_text_or_notes(tmp_path):
    """Issue 49: on a deployment a site's notes and names reached the coordinator's
    model.json and the codebook sent back to every node. The node refuses them before
    its description leaves, and the run's kinds (the coordinator's) do not count as
    the site owner's declaration."""
    paths = asia_files(tmp_path, rows=400)
    frame = pd.read_csv(paths[1])
    frame["notes"] = None
    frame.loc[[3, 7], "notes"] = ["Jane Doe, MRN 4471-22, HIV positive", "Bob Roe MRN 1183-09 …"]
    frame["remark"] = None
    frame.loc[[5, 9], "remark"] = ["seen by the night nurse", "sent home with family"]
    entry = runnable("fedavg")
    sites = {"target": "dysp", "node_sites": ["site-1", "site-2", "site-3"]}
    spec = SiteSpec("site-2", paths[1])
    for column in ("notes", "remark"):
        frame.drop(columns=[c for c in ("notes", "remark") if c != column]).to_csv(
            paths[1], index=False
        )
        for kinds in ({}, {column: "categorical"}):
            settings = apply_settings(entry.settings(), {**sites, "kinds": kinds}, method="fedavg")
            with pytest.raises(
                DataError,
                match=rf"^column '{column}' of site 'site-2' .* free text .* does not take "
                r"the run's kinds as its owner's declaration\)$",
            ) as refused:
                describe(entry, settings, spec)
            for value in ("Jane", "MRN", "nurse", "family"):
                assert value not in str(refused.value)


def test_the_handshake_audits_what_a_site_format_describes(tmp_path):
    """A site format that would send more than metadata is stopped at the node."""
    paths = asia_files(tmp_path, rows=40)
    entry = runnable("fedavg")
    settings = apply_settings(
        entry.settings(), {"target": "dysp", "node_sites": ["site-1"]}, method="fedavg"
    )
    leaky = dataclasses.replace(
        entry.site_format,
        describe=lambda spec, s, roles: {"site": spec.name, "n_rows": 40, "mean_age": 51.5},
    )
    with pytest.raises(
        PrivacyViolationError,
        match=r"site 's': schema handshake \(describe\): key 'mean_age' holds float",
    ):
        describe(dataclasses.replace(entry, site_format=leaky), settings, SiteSpec("s", paths[0]))


def test_merge_checks_the_roles_against_every_site(tmp_path):
    paths = asia_files(tmp_path, rows=100)
    entry = runnable("fedcd")
    sites = {"regime": "regime", "node_sites": ["site-1", "site-2"]}
    settings = apply_settings(entry.settings(), sites, method="fedcd")
    specs = [SiteSpec(p.stem, p) for p in paths[:2]]
    with pytest.raises(UnknownVariableError, match="no site has the regime column 'regime'"):
        merge(entry, settings, [describe(entry, settings, s) for s in specs])


def test_node_sites_need_the_flower_backend(tmp_path):
    with pytest.raises(ConfigError, match="--backend flower"):
        execute("fedavg", [{"node_sites": ["a", "b"], "target": "x"}], tmp_path / "x")
    with pytest.raises(ConfigError, match="not several"):
        execute("fedavg", [{"node_sites": ["a"], "sites": ["a.csv"]}], tmp_path / "x")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give the node's data: --data FILE"),
        (["--partition", "0", "--data", "x.csv"], "one of them"),
        (["--data", "nope.csv"], "--data nope.csv does not exist"),
        (["--partition", "1", "--name", "x"], "add --data FILE"),
    ],
)
def test_supernode_options(tmp_path, monkeypatch, args, message):
    from typer.testing import CliRunner

    from fedstruct.cli import app

    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.csv").write_text("a\n1\n")
    result = CliRunner().invoke(app, ["flower", "supernode", "--insecure", *args])
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())
