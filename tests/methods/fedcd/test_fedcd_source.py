"""FED-CD's sources: the paper's federation and a user's files with a regime column,
each resolved once per run (the run reads the truth and the data from them)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml

import fedstruct.methods.fedcd.sources as fedcd_federation
import fedstruct.runs.sites as sites_module
import fedstruct.runs.source as source_module
from fedstruct.data import load_network
from fedstruct.errors import ConfigError, UnknownVariableError
from fedstruct.graphs import write_graph
from fedstruct.methods.fedcd import FedCDRun, InterventionTask, RegimeSites
from fedstruct.methods.fedcd.sources import roles, source
from fedstruct.runs.contract import execute, runnable
from fedstruct.runs.settings import apply_settings

TINY = {
    "rounds": 1,
    "epochs_per_round": 1,
    "model_steps": 20,
    "graph_steps": 5,
    "graphs_per_step": 10,
    "alone": "none",
}


def test_the_regime_role_is_the_setting_over_the_manifest():
    assert roles(FedCDRun(), {"regime": "lab"}) == {"regime": "lab"}
    assert roles(FedCDRun(regime="mine"), {"regime": "lab"}) == {"regime": "mine"}
    with pytest.raises(ConfigError, match="--set regime=COLUMN"):
        roles(FedCDRun(), {"target": "x"})


def test_the_protocol_source_draws_its_dag_and_rows_once(monkeypatch):
    calls = []
    drawn = fedcd_federation.random_dag
    monkeypatch.setattr(
        fedcd_federation, "random_dag", lambda *a, **k: calls.append(a) or drawn(*a, **k)
    )
    settings = FedCDRun(network="chain", variables=4, samples=60, samples_per_intervention=8)
    task = source(settings, None)
    assert isinstance(task, InterventionTask)
    assert task.names == ("client-1", "client-2")  # FED-CD's default: 2 clients
    clients = task.clients()
    assert task.clients() is clients  # the rows are kept, not drawn again
    assert list(clients[0].rows.columns) == list(task.truth.names)
    assert task.truth is task.truth and len(calls) == 1


def test_a_protocol_run_builds_the_dag_once(monkeypatch, tmp_path):
    calls = []
    drawn = fedcd_federation.random_dag
    monkeypatch.setattr(
        fedcd_federation, "random_dag", lambda *a, **k: calls.append(a) or drawn(*a, **k)
    )
    settings = {"network": "chain", "variables": 4, "clients": 2, "samples": 200,
                "samples_per_intervention": 10, **TINY}  # fmt: skip
    metrics = execute("fedcd", [settings], tmp_path / "run").metrics
    assert metrics["shd"] >= 0 and len(calls) == 1


def _regime_sites(folder) -> list[str]:
    network = load_network("asia")
    paths = []
    for k in range(2):
        parts = [network.sample(150, seed=k).assign(regime="obs")]
        for target in network.names[k::2]:
            rows = network.sample(20, seed=10 + k, interventions={target: "uniform"})
            parts.append(rows.assign(regime=target))
        path = folder / f"lab-{k}.csv"
        pd.concat(parts).to_csv(path, index=False)
        paths.append(str(path))
    return paths


def test_a_manifest_run_reads_the_manifest_and_the_truth_once(monkeypatch, tmp_path):
    paths = _regime_sites(tmp_path)
    truth = tmp_path / "asia.json"
    write_graph(load_network("asia").graph, truth)
    manifest = tmp_path / "federation.yaml"
    sites = [{"name": Path(path).stem, "path": path} for path in paths]
    manifest.write_text(yaml.safe_dump({"regime": "regime", "truth": str(truth), "sites": sites}))
    reads: list[tuple[str, str]] = []
    for module, name in ((source_module, "read_graph_file"), (source_module, "read_manifest"),
                         (sites_module, "read_manifest")):  # fmt: skip
        monkeypatch.setattr(module, name, _counted(getattr(module, name), name, reads))
    metrics = execute("fedcd", [{"manifest": str(manifest), **TINY}], tmp_path / "run").metrics
    # the manifest once for the run's source; the truth checked before round 1 and
    # scored after the fit, from that one read
    assert reads == [("read_manifest", str(manifest)), ("read_graph_file", str(truth))]
    assert metrics["shd"] >= 0 and metrics["rows_lab-0"] == 150 + 4 * 20


def _counted(read: Callable[[Any], Any], name: str, reads: list[tuple[str, str]]) -> Callable:
    def counted(path: Any) -> Any:
        reads.append((name, str(path)))
        return read(path)

    return counted


def test_a_files_source_names_the_site_that_lacks_a_variable(tmp_path):
    paths = _regime_sites(tmp_path)
    frame = pd.read_csv(paths[1]).drop(columns=["asia"])
    frame.to_csv(paths[1], index=False)
    entry = runnable("fedcd")
    settings = apply_settings(
        entry.settings(), {"sites": paths, "regime": "regime"}, method="fedcd"
    )
    files = entry.resolve(settings)
    assert isinstance(files, RegimeSites) and files.names == ("lab-0", "lab-1")
    with pytest.raises(UnknownVariableError, match=r"site 'lab-1' lacks \['asia'\]"):
        files.clients()


def _with_level(paths: list[str]) -> None:
    """Add a continuous column ``level`` (3 values missing at each site)."""
    rng = np.random.default_rng(0)
    for k, path in enumerate(paths):
        frame = pd.read_csv(path)
        level = 100.0 * frame["either"].to_numpy() + rng.normal(50.0 * k, 30.0, len(frame))
        level[:3] = np.nan
        frame.insert(0, "level", level)
        frame.to_csv(path, index=False)


def test_a_continuous_column_runs_in_federated_quantile_bins(tmp_path):
    """Before issue 31 (item 7) FED-CD refused a continuous column; now the method's
    exchange cuts it into federated quantile bins, reported, saved with the model and
    read back by ``fedstruct.load``; a row missing a value leaves its regime (counted)."""
    import fedstruct

    paths = _regime_sites(tmp_path)
    _with_level(paths)
    settings = {"sites": paths, "regime": "regime", **TINY}
    run = execute("fedcd", [settings], tmp_path / "run")
    metrics = run.metrics
    assert metrics["binned_columns"] == 1 and metrics["bins_min"] == metrics["bins_max"] == 4
    assert not any(key.startswith("bin_cut") for key in metrics)  # in bins.csv (issue 49)
    assert metrics["rows_lab-0"] == 150 + 4 * 20 - 3 and metrics["dropped_rows_lab-0"] == 3
    pooled = np.concatenate([pd.read_csv(p)["level"].dropna().to_numpy() for p in paths])
    saved = pd.read_csv(tmp_path / "run" / "bins.csv")
    assert saved.columns.tolist() == ["column", "bins", "cut_1", "cut_2", "cut_3"]
    assert saved.column.tolist() == ["level"] and saved.bins.tolist() == [4]
    cuts = saved.iloc[0, 2:].to_numpy(dtype=float)
    expected = np.quantile(pooled, [0.25, 0.5, 0.75], method="inverted_cdf")
    assert np.all(np.abs(cuts - expected) <= 8 * pooled.std() / 256 + 1e-9)
    np.testing.assert_allclose(run.model.bins_.cuts["level"], cuts, rtol=1e-15, atol=0)
    assert fedstruct.load(tmp_path / "run").bins_ == run.model.bins_
    files = runnable("fedcd").resolve(
        apply_settings(FedCDRun(), {"sites": paths, "regime": "regime"}, method="fedcd")
    )
    assert files.continuous == ("level",)  # the source hands the method numbers
    assert not files.clients()[0].rows["level"].isin(range(4)).all()


def test_continuous_columns_are_announced_before_round_one_and_ctrl_c_says_what_next(
    tmp_path, monkeypatch
):
    """Issue 49: 3 labs x 46 continuous columns ran 15 minutes without a word, and
    Ctrl-C printed nothing. Before round 1 a warning says that ENCO bins them and what
    each round costs; Ctrl-C stops with one line on what the folder holds (exit 130)."""
    from typer.testing import CliRunner

    from fedstruct.cli import app
    from fedstruct.methods.fedcd.enco.learner import ENCO

    paths = _regime_sites(tmp_path)
    _with_level(paths)
    seen: list[str] = []

    def interrupted(*args, **kwargs):
        seen.append("enco")
        raise KeyboardInterrupt

    monkeypatch.setattr(ENCO, "fit", interrupted)
    out = tmp_path / "run"
    sites = [a for p in paths for a in ("--site", p)]
    tiny = [a for k, v in TINY.items() for a in ("--set", f"{k}={v}")]
    result = CliRunner().invoke(
        app, ["run", "fedcd", *sites, "--set", "regime=regime", *tiny, "--quiet", "--out", str(out)]
    )
    assert result.exit_code == 130 and seen == ["enco"]
    text = " ".join(result.output.split())
    warned = text.index(
        "warning: FED-CD's ENCO learns categories: 1 continuous column is cut "
        f"into 4 pooled quantile bins (--set bins=K; cut points in {out / 'bins.csv'})"
    )
    assert "The run: 1 round of 1 ENCO epoch at every site, each epoch 20 distribution" in text
    stopped = text.index(
        f"stopped: {out}: a fedcd run, stopped before any round was saved; nothing to "
        "resume: start the run again with --overwrite"
    )
    assert warned < stopped
    assert json.loads((out / "run.json").read_text())["status"] == "stopped"
