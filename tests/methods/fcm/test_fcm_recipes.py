"""The F-CMs recipes run the paper's protocol: clients with perturbed graphs (App. D.1)."""

import numpy as np
import pytest

from fedstruct.methods.fcm import ConceptSource, FCMRun, recipes
from fedstruct.runs.recipes import run_recipe

#: The recipes whose runs federate the paper's clients (fcm-robustness sweeps the
#: perturbation itself).
FEDERATING = ("fcm-table1", "fcm-interventions", "fcm-convergence", "fcm-freezing",
              "fcm-dp", "fcm-clients")  # fmt: skip


class _Captured(Exception):
    """Raised by the stand-in for ``compare_variants`` once it has seen a recipe's runs."""


def _runs_of(name: str, quick: bool, tmp_path, monkeypatch) -> list[dict]:
    """The settings of every run recipe ``name`` asks for (common settings, then the
    variant's), without running any."""
    seen: list[dict] = []

    def capture(method, variants, seeds, out, *, common=None, **kwargs):
        assert method == "fcm"
        seen.extend({**(common or {}), **v} for v in variants.values())
        raise _Captured

    monkeypatch.setattr(recipes, "compare_variants", capture)
    with pytest.raises(_Captured):
        run_recipe(name, quick=quick, out=tmp_path / name, seeds=1)
    return seen


@pytest.mark.parametrize("quick", [True, False])
@pytest.mark.parametrize("name", FEDERATING)
def test_every_federating_recipe_perturbs_the_papers_share_of_client_graphs(
    name, quick, tmp_path, monkeypatch
):
    runs = _runs_of(name, quick, tmp_path, monkeypatch)
    assert runs
    for settings in runs:
        assert settings["perturbed_clients"] == 0.1
        assert settings["perturbed_edges"] == 0.1
        FCMRun(**settings)  # settings the run accepts


def test_a_recipe_body_keeps_a_perturbation_it_is_given():
    assert recipes.paper_protocol({}) == recipes.PERTURBATION
    given = recipes.paper_protocol({"perturbed_clients": 0.0, "samples": 10})
    assert given == {"perturbed_clients": 0.0, "perturbed_edges": 0.1, "samples": 10}
    assert FCMRun().perturbed_clients == FCMRun().perturbed_edges == 0.0  # run fcm's own


@pytest.mark.parametrize("seed", [0, 1])
def test_the_recipes_perturbed_clients_send_graphs_that_differ_from_their_true_sub_graph(seed):
    """Under the recipes' settings 10% of the 20 clients (2) propose their true
    sub-graph with 10% of its edges (at least one) flipped, removed or added; the
    others, and every client of ``fedstruct run fcm``'s defaults, propose it as is."""
    small = {"samples": 2000, "autoencoder_epochs": 1, "seed": seed}
    perturbed = ConceptSource(FCMRun(network="asia", **recipes.paper_protocol(small)))
    plain = ConceptSource(FCMRun(network="asia", **small))
    truth = perturbed.partition.true_graphs
    assert truth == plain.partition.true_graphs  # the same clients, only their graphs move
    differing = {}
    for client in perturbed.clients():
        own = truth[client.name]
        assert client.graph.names == own.names and client.graph.is_dag()
        a, b = client.graph.directed(), own.directed()
        pairs = int(np.triu((a != b) | (a.T != b.T), 1).sum())
        if pairs:
            differing[client.name] = pairs
    assert len(differing) == 2, differing
    assert set(differing.values()) == {1}  # round(0.1 x <= 8 edges), at least one
    assert all(c.graph == truth[c.name] for c in plain.clients())
