"""FedCDnv's sources: the paper's variable subsets, computed once per run, or a user's
files as they are."""

from __future__ import annotations

import fedstruct.methods.fedcdnv.sources as fedcdnv_federation
from fedstruct.data import load_network
from fedstruct.methods.fedcdnv import FedCDnvRun, VariableSubsetTask
from fedstruct.methods.fedcdnv.sources import source
from fedstruct.runs.contract import execute, runnable
from fedstruct.runs.settings import apply_settings
from fedstruct.runs.source import SiteFiles

SYNTHETIC = {"network": "synthetic", "variables": 8, "clients": 2, "seed": 4}


def test_the_protocol_source_computes_its_instance_once():
    task = source(FedCDnvRun(**SYNTHETIC, max_samples=300), None)
    assert isinstance(task, VariableSubsetTask)
    assert task.names == ("client-1", "client-2")
    clients = task.clients()
    assert task.clients() is clients  # the rows are kept, not drawn again
    assert task.split is task.split and task.truth is task.truth
    assert set(clients[0].variables) <= set(task.truth.names) == set(task.split.observed)


def test_a_run_draws_the_network_once_and_scores_the_reference(monkeypatch, tmp_path):
    calls = []
    drawn = fedcdnv_federation.erdos_renyi_dag
    monkeypatch.setattr(
        fedcdnv_federation, "erdos_renyi_dag", lambda *a, **k: calls.append(a) or drawn(*a, **k)
    )
    settings = {**SYNTHETIC, "min_samples": 200, "max_samples": 300, "reference": True}
    metrics = execute("fedcdnv", [settings], tmp_path / "run").metrics
    assert len(calls) == 1
    assert 0.0 <= metrics["central_f1_edge"] <= 1.0 and metrics["n_variables"] <= 8


def test_site_files_are_the_source_as_they_are(tmp_path):
    rows = load_network("asia").sample(400, seed=0)
    paths = []
    for k in range(2):
        path = tmp_path / f"site-{k}.csv"
        rows.iloc[k * 200 : (k + 1) * 200].to_csv(path, index=False)
        paths.append(str(path))
    entry = runnable("fedcdnv")
    settings = apply_settings(entry.settings(), {"sites": paths}, method="fedcdnv")
    files = entry.resolve(settings)
    assert isinstance(files, SiteFiles) and files.names == ("site-0", "site-1")
    assert files.truth is None and files.report()["rows_site-1"] == 200
