"""``fedstruct reproduce RECIPE --seeds K``: the first K of a recipe's seeds, for every
recipe, without running one (the recipes' runs are replaced or refused before they start).
A recipe declares its seed counts; run_recipe picks its seeds and passes them as ``seeds=``.
"""

import json

import pytest
from typer.testing import CliRunner

from fedstruct.cli import app
from fedstruct.errors import ConfigError
from fedstruct.methods.fedcd import figures
from fedstruct.runs import recipes
from fedstruct.runs.recipes import (
    Recipe,
    RecipeReport,
    recipe_list,
    recipe_seeds,
    run_recipe,
)

#: Every recipe's seed count, (with --quick, at full size): a new recipe must declare
#: its seed counts (Recipe.seed_counts) and be listed here.
SEED_COUNTS = {
    "aggregator-robustness": (1, 3),
    "cafe-ablation": (1, 3),
    "cafe-cf": (1, 3),
    "cafe-curves": (1, 3),
    "cafe-dirichlet": (1, 3),
    "cafe-epochs": (1, 3),
    "cafe-sampling": (1, 3),
    "discover-then-fcm": (1, 3),
    "discover-then-fedngm": (1, 3),
    "fcm-clients": (1, 5),
    "fcm-convergence": (1, 5),
    "fcm-dp": (1, 5),
    "fcm-freezing": (1, 5),
    "fcm-interventions": (1, 3),
    "fcm-robustness": (1, 3),
    "fcm-table1": (1, 5),
    "fedavg-participation": (1, 3),
    "fedcd-fig1": (1, 10),
    "fedcd-fig10": (1, 10),
    "fedcd-fig11": (1, 10),
    "fedcd-fig2": (1, 10),
    "fedcd-fig4": (1, 10),
    "fedcd-fig6a": (1, 10),
    "fedcd-fig6b": (1, 10),
    "fedcd-fig7": (1, 10),
    "fedcd-fig9": (1, 10),
    "fedcd-proximity": (1, 10),
    "fedcd-rounds": (1, 5),
    "fedcd-table1": (1, 10),
    "fedcd-vertical": (1, 10),
    "fedcdnv-benchmarks": (2, 5),
    "fedcdnv-clients": (1, 5),
    "fedcdnv-fdr": (3, 5),
    "fedcdnv-identical": (1, 5),
    "fedcdnv-identical-sachs": (1, 10),
    "fedcdnv-interval": (1, 5),
    "fedcdnv-parameters": (1, 5),
    "fedcdnv-sachs": (3, 10),
    "fedcdnv-synthetic": (2, 5),
    "fedngm-synthetic": (1, 3),
    "fedngm-tabular": (1, 3),
}


@pytest.mark.timeout(60)  # a recipe that ran before picking its seeds fails here
def test_every_recipe_declares_its_seeds_and_a_count_above_is_refused_before_it_runs(tmp_path):
    """One count more than a recipe has is refused by run_recipe before the recipe is
    called: nothing ran, no folder was made, and the message gives the count."""
    assert {r.name: r.seed_counts for r in recipe_list()} == SEED_COUNTS
    for name, counts in SEED_COUNTS.items():
        for quick, count in zip((True, False), counts, strict=True):
            size = "with --quick" if quick else "at full size"
            with pytest.raises(ConfigError) as error:
                run_recipe(name, quick=quick, out=tmp_path / name, seeds=count + 1)
            assert str(error.value) == (
                f"--seeds {count + 1}: recipe {name!r} has {count} "
                f"seed{'s' * (count > 1)} {size}; give --seeds from 1 to {count}"
            )
    assert not any(tmp_path.iterdir())


@pytest.fixture
def probe(monkeypatch):
    """A recipe with 10 seeds (3 with --quick) that records the seeds it was given."""
    given = []

    def run(quick, out, seeds):
        given.append(list(seeds))
        return RecipeReport(None, out)

    probe = Recipe("probe", "seeds", run, seed_counts=(3, 10))
    monkeypatch.setitem(recipes._RECIPES, "probe", probe)
    return given


def _record(out):
    return json.loads((out / "recipe.json").read_text())


def test_seeds_runs_the_first_k_and_records_them(tmp_path, probe):
    run_recipe("probe", quick=False, out=tmp_path / "full", seeds=4)
    run_recipe("probe", quick=True, out=tmp_path / "quick", seeds=2)
    run_recipe("probe", quick=False, out=tmp_path / "all")
    run_recipe("probe", quick=True, out=tmp_path / "all-quick")
    assert probe == [[0, 1, 2, 3], [0, 1], list(range(10)), [0, 1, 2]]
    assert _record(tmp_path / "full") == {
        "recipe": "probe",
        "quick": False,
        "seeds": [0, 1, 2, 3],
        "of": 10,
        "command": "fedstruct reproduce probe --seeds 4",
    }
    assert _record(tmp_path / "quick")["command"] == "fedstruct reproduce probe --quick --seeds 2"
    assert not (tmp_path / "all" / "recipe.json").exists()  # without --seeds: as before
    assert list(recipe_seeds(recipes._RECIPES["probe"], False, 4)) == [0, 1, 2, 3]


def test_a_later_run_into_the_folder_rewrites_the_record(tmp_path, probe):
    run_recipe("probe", quick=False, out=tmp_path, seeds=1)
    run_recipe("probe", quick=False, out=tmp_path)
    assert _record(tmp_path)["seeds"] == list(range(10))
    assert _record(tmp_path)["command"] == "fedstruct reproduce probe"


@pytest.mark.parametrize(
    ("seeds", "message"),
    [
        (0, "--seeds 0: recipe 'probe' has 10 seeds at full size; give --seeds from 1 to 10"),
        (-2, "--seeds -2: recipe 'probe' has 10 seeds at full size; give --seeds from 1 to 10"),
        (True, "--seeds True: give a whole number of seeds, e.g. --seeds 1"),
    ],
)
def test_a_bad_seed_count_is_one_line(tmp_path, probe, seeds, message):
    with pytest.raises(ConfigError) as error:
        run_recipe("probe", quick=False, out=tmp_path, seeds=seeds)
    assert str(error.value) == message
    assert probe == []  # refused before the recipe ran


def test_a_recipe_with_no_seeds_refuses_the_option(tmp_path, monkeypatch):
    ran = []
    seedless = Recipe("seedless", "no seeds", lambda quick, out: ran.append(quick))
    monkeypatch.setitem(recipes._RECIPES, "seedless", seedless)
    run_recipe("seedless", quick=True, out=tmp_path)  # called without seeds=
    with pytest.raises(ConfigError) as error:
        run_recipe("seedless", quick=False, out=tmp_path, seeds=1)
    assert ran == [True]  # refused before it ran
    assert str(error.value) == (
        "recipe 'seedless' runs no seeds of its own, so --seeds does not apply; "
        "run it without --seeds"
    )
    assert not (tmp_path / "recipe.json").exists()


FIGURES = {  # recipe: (figure function, the arguments after quick, out and seeds)
    "fedcd-fig1": ("horizontal_sweep", (["ER-2"],), {"title": "FED-CD Figure 1"}),
    "fedcd-fig2": ("vertical_sweep", (), {}),
    "fedcd-fig4": ("rounds_by_size", (["ER-2"],), {"title": "FED-CD Figure 4"}),
    "fedcd-fig6a": ("clients_sweep", (), {"grow": False}),
    "fedcd-fig7": ("entropy_rounds", (), {}),
    "fedcd-fig11": ("structured_vertical", (), {}),
}


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_one_seed_of_a_fedcd_figure_is_its_full_design_with_seed_0(tmp_path, monkeypatch, name):
    """``fedstruct reproduce fedcd-fig1 --seeds 1`` is ``horizontal_sweep(False, out,
    ["ER-2"], [0], "FED-CD Figure 1")``, and likewise for the other figures."""
    function, before, keywords = FIGURES[name]
    calls = []

    def figure(quick, out, *args, **kwargs):
        calls.append((quick, out, *args, kwargs))
        return RecipeReport(None, out)

    monkeypatch.setattr(figures, function, figure)
    result = CliRunner().invoke(app, ["reproduce", name, "--seeds", "1", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    quick, out, *args, kwargs = calls[0]
    if "title" in keywords:  # the title is the last positional argument
        *args, title = args
        kwargs = {**kwargs, "title": title}
    *design, seeds = args
    assert (quick, out, tuple(design), list(seeds), kwargs) == (
        False, tmp_path, before, [0], keywords
    )  # fmt: skip
    assert _record(tmp_path)["command"] == f"fedstruct reproduce {name} --seeds 1"


def test_the_cli_documents_and_checks_seeds(tmp_path):
    cli = CliRunner()
    help_text = " ".join(cli.invoke(app, ["reproduce", "--help"]).output.replace("│", "").split())
    assert "--seeds INTEGER Run the recipe's design with only its first K seeds" in help_text
    result = cli.invoke(app, ["reproduce", "fedcd-fig1", "--seeds", "11", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "recipe 'fedcd-fig1' has 10 seeds at full size; give --seeds from 1 to 10" in " ".join(
        result.output.split()
    )
