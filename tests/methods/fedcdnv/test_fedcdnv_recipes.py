"""The Appendix D recipes of FedCDnv (Figures 9-12, Table 6) at --quick."""

import json

import pytest

from fedstruct.runs.recipes import run_recipe

pytestmark = pytest.mark.slow


def rows_of(out):
    return json.loads((out / "results.json").read_text())


def settings_of(folder):
    return json.loads((folder / "config.json").read_text())["settings"]


def test_fedcdnv_clients_sweeps_the_number_of_clients(tmp_path):
    run_recipe("fedcdnv-clients", quick=True, out=tmp_path)
    rows = rows_of(tmp_path)
    assert [r["name"] for r in rows] == [
        f"clients: {m} @ {k}" for m in ("FedCDnv", "FedCDnv-vote", "FCI-base") for k in (2, 4)
    ]
    assert all(0.0 <= r["precision_edge"] <= 1.0 and "recall_orientation" in r for r in rows)
    assert settings_of(tmp_path / "clients" / "fedcdnv---4" / "seed-0")["clients"] == 4
    assert (tmp_path / "clients" / "f1_edge.png").is_file()


def test_fedcdnv_identical_gives_every_client_every_variable(tmp_path):
    run_recipe("fedcdnv-identical", quick=True, out=tmp_path)
    names = [r["name"] for r in rows_of(tmp_path)]
    assert names == [
        f"{axis}: {m} @ {v}"
        for axis, v in (("variables", 10), ("clients", 2), ("network", "child"))
        for m in ("FedCDnv", "FedCDnv-vote")
    ]
    run = tmp_path / "network" / "fedcdnv---child" / "seed-0"
    assert settings_of(run)["overlap"] == 1.0
    model = json.loads((run / "model.json").read_text())
    local = [set(g["names"]) for g in model["learned"]["local_graphs"].values()]
    assert all(variables == local[0] for variables in local)  # identical variable sets


def test_fedcdnv_identical_sachs_is_table_6(tmp_path):
    run_recipe("fedcdnv-identical-sachs", quick=True, out=tmp_path)
    rows = rows_of(tmp_path)
    assert [r["name"] for r in rows] == ["FedCDnv", "FedCDnv-vote"]
    assert all(0.5 < r["f1_edge"] < 0.9 for r in rows)


def test_fedcdnv_interval_sweeps_both_ends(tmp_path):
    run_recipe("fedcdnv-interval", quick=True, out=tmp_path)
    names = [r["name"] for r in rows_of(tmp_path)]
    assert names == [
        "alpha-theta1: FedCDnv @ 0.001",
        "alpha-theta1: FedCDnv @ 0.009",
        "alpha+theta2: FedCDnv @ 0.5",
        "alpha+theta2: FedCDnv @ 0.1",
    ]
    low = settings_of(tmp_path / "alpha-theta1" / "fedcdnv---0-009" / "seed-0")
    assert (low["theta1"], low["theta2"]) == (0.041, 0.45)
    high = settings_of(tmp_path / "alpha+theta2" / "fedcdnv---0-1" / "seed-0")
    assert (high["theta1"], high["theta2"]) == (0.049, 0.05)


def test_fedcdnv_parameters_sweeps_overlap_latent_and_samples(tmp_path):
    run_recipe("fedcdnv-parameters", quick=True, out=tmp_path)
    names = [r["name"] for r in rows_of(tmp_path)]
    assert names == [
        "overlap: FedCDnv @ 0.95",
        "overlap: FedCDnv @ 0.6",
        "latent_ratio: FedCDnv @ 0.05",
        "latent_ratio: FedCDnv @ 0.35",
        "max_samples: FedCDnv @ 200",
        "max_samples: FedCDnv @ 500",
    ]
    run = settings_of(tmp_path / "max_samples" / "fedcdnv---200" / "seed-0")
    assert (run["min_samples"], run["max_samples"]) == (100, 200)
