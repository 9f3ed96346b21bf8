"""The FED-CD figures' recipes at --quick: each writes its table, plots and run designs.

What ENCO learns is checked elsewhere (test_fedcd_run.py); these check each recipe's
design (the settings its runs get) and what it writes, on ENCO budgets cut further.
"""

import json

import pytest

from fedstruct.methods.fedcd import figures
from fedstruct.runs.recipes import run_recipe


@pytest.fixture(autouse=True)
def _smaller(monkeypatch):
    monkeypatch.setitem(figures.TINY, "model_steps", 8)
    monkeypatch.setitem(figures.TINY, "graph_steps", 2)
    monkeypatch.setitem(figures.TINY, "samples", 200)
    monkeypatch.setitem(figures.TINY, "rounds", 1)


def _rows(out):
    return [r["name"] for r in json.loads((out / "results.json").read_text())]


def _settings(out, variant):
    config = json.loads((out / variant / "seed-0" / "config.json").read_text())
    return config["settings"]


@pytest.mark.slow
def test_fig6b_writes_one_curve_per_interventional_size_along_the_clients(tmp_path):
    run_recipe("fedcd-fig6b", quick=True, out=tmp_path)
    assert _rows(tmp_path) == ["Int. 120 @ 2", "Int. 120 @ 3"]
    assert _settings(tmp_path, "int--120---3")["clients"] == 3
    assert (tmp_path / "shd.png").exists()


def test_fig7_runs_ten_clients_and_plots_edge_entropy(tmp_path):
    run_recipe("fedcd-fig7", quick=True, out=tmp_path)
    assert _rows(tmp_path) == ["proximity", "vote"]
    assert _settings(tmp_path, "proximity")["clients"] == 10
    history = json.loads((tmp_path / "vote" / "seed-0" / "history.json").read_text())
    assert [h["round"] for h in history] == [1] and "edge_entropy" in history[0]
    assert (tmp_path / "edge_entropy.png").exists()


def test_fig4_runs_both_data_sizes_with_single_client_and_centralized(tmp_path):
    run_recipe("fedcd-fig4", quick=True, out=tmp_path)
    rows = json.loads((tmp_path / "results.json").read_text())
    assert [r["name"] for r in rows] == ["ER-2 | 10k+2k", "ER-2 | 25k+5k"]
    assert all("single_client_shd" in r and "centralized_shd" in r for r in rows)
    small, large = _settings(tmp_path, "er-2---10k-2k"), _settings(tmp_path, "er-2---25k-5k")
    assert large["samples"] > small["samples"]
    assert (tmp_path / "shd.png").exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "rows", "plots"),
    [
        ("fedcd-fig1", ["ER-2 @ 10", "ER-2 @ 20"], ["shd-er-2.png"]),
        ("fedcd-fig2", ["proximity @ 60", "proximity @ 120", "vote @ 60", "vote @ 120"],
         ["shd.png"]),
        ("fedcd-fig11", ["chain | 10-10", "chain | 16-4", "bidiag | 10-10", "bidiag | 16-4"],
         []),
    ],
)  # fmt: skip
def test_quick_figure_recipe_writes_its_table_and_plots(tmp_path, name, rows, plots):
    run_recipe(name, quick=True, out=tmp_path)
    assert _rows(tmp_path) == rows
    assert (tmp_path / "results.md").exists()
    assert all((tmp_path / p).exists() for p in plots)


def test_the_structured_and_undirected_designs_reach_their_runs(tmp_path, monkeypatch):
    """Without running ENCO: the variants each recipe asks for (graphs, distances)."""
    asked = {}

    def record(method, variants, seeds, out, *, common, progress):
        asked.update({label: {**common, **v} for label, v in variants.items()})
        raise StopIteration

    monkeypatch.setattr(figures, "compare_variants", record)
    for name in ("fedcd-fig6a", "fedcd-fig6b"):
        with pytest.raises(StopIteration):
            run_recipe(name, quick=False, out=tmp_path)
        # 6a: the global data set stays; 6b: each client brings 5,000 + 25 per variable
        grows = name == "fedcd-fig6b"
        two, ten = asked["Int. 1000 @ 2"], asked["Int. 1000 @ 10"]
        assert (two["clients"], ten["clients"]) == (2, 10)
        assert (ten["samples"], ten["samples_per_intervention"]) == (
            (50000, 250) if grows else (10000, 50)
        )
        assert (two["samples"], two["samples_per_intervention"]) == (10000, 50)
    for name in ("fedcd-fig9", "fedcd-fig10", "fedcd-fig11", "fedcd-proximity"):
        with pytest.raises(StopIteration):
            run_recipe(name, quick=False, out=tmp_path)
    assert asked["collider | 25k+5k"]["network"] == "collider"
    assert asked["collider | 25k+5k"]["samples_per_intervention"] == 250
    assert asked["full @ 200"]["samples_per_intervention"] == 400  # 200 per client, 2 clients
    assert asked["full @ 200"]["centralized"] is True
    assert asked["jungle | 16-4"]["network"] == "jungle"
    assert asked["jungle | 16-4"]["targets_per_client"] == "16,4"
    assert asked["full | 10-10"]["split"] == "vertical"
    undirected = asked["proximity | undirected | beta=0.03"]
    assert (undirected["distance"], undirected["temperature"]) == ("undirected", 0.03)
    assert asked["vote"]["samples_per_intervention"] == 50
    assert asked["vote"]["clients"] == 5
    assert len([label for label in asked if label.startswith("proximity |")]) == 6
