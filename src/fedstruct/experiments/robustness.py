"""Robustness of every graph aggregator to clients that send a perturbed graph.

F-CMs' paper studies graph perturbation for its own vote only (App. E.6). The
``aggregator-robustness`` recipe (issue 21) measures it for every aggregator of the
library on one harness: each method runs on its own benchmark federation with six
clients, of which 0, 1 or 2 are *adversaries* (:class:`AdversarialBackend`): they
compute their honest reply, then replace every graph in it by a perturbed one
(:func:`~fedstruct.graphs.perturb.perturb_graph`: a share ``rate`` of the edges
reversed, removed or added) before it leaves. Everything else they send (sample
sizes, p-values, weights) stays honest: only the graph lies. The table gives the SHD
of the federated graph to the truth, per aggregator and number of adversaries.
Each adversary perturbs its own graph independently; colluding adversaries, who agree
on one lie, are the harder case for a vote and are not simulated. The aggregators:

* FedCDnv, ``tpss`` and ``vote`` (the clients' PAGs, ``fedcdnv.init``/``update``);
* FED-CD, ``proximity`` and ``vote`` (the clients' belief matrices: the graph its
  beliefs imply is perturbed and only the beliefs of the edges it changes are
  rewritten, with confidence 0.9: :meth:`AdversarialClient._beliefs`);
* F-CMs' strength vote (the clients' concept graphs, ``fcm.describe``);
* FedNGM's merge (the clients' local graphs, ``fedngm.graph``).

The truth is what each method's run scores against: the PAG over FedCDnv's
integrated variables, FED-CD's DAG, F-CMs' concept DAG, the conditional-independence
graph of FedNGM's synthetic data over the common variables.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fedstruct.data.client import ClientData
from fedstruct.experiments.compare import write_results
from fedstruct.experiments.fcm.federation import concept_data
from fedstruct.experiments.fedcd.federation import source
from fedstruct.experiments.fedcdnv.federation import build_setting
from fedstruct.experiments.fedngm.federation import federation as fedngm_federation
from fedstruct.experiments.recipes import Recipe, RecipeReport, register_recipe
from fedstruct.experiments.runs import runnable
from fedstruct.experiments.settings import apply_settings
from fedstruct.experiments.sites import aligned
from fedstruct.fl.backend import Federated, LocalBackend
from fedstruct.fl.client import Client
from fedstruct.fl.grid import Grid, LocalGrid, torch_threads
from fedstruct.fl.message import Message
from fedstruct.fl.participation import Participation
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.metrics import shd
from fedstruct.graphs.perturb import perturb_graph
from fedstruct.methods.fedcd.learner import Beliefs

__all__ = ["AGGREGATORS", "BENCHMARKS", "AdversarialBackend", "AdversarialClient"]

#: Edge belief of an adversary's FED-CD reply where its perturbed graph has an edge
#: (and one minus it where it has none).
BELIEF = 0.9

#: Aggregator label -> (method, the settings that choose the aggregator).
AGGREGATORS: dict[str, tuple[str, dict[str, Any]]] = {
    "FedCDnv tpss": ("fedcdnv", {"strategy": "tpss"}),
    "FedCDnv vote": ("fedcdnv", {"strategy": "vote"}),
    "FED-CD proximity": ("fedcd", {"aggregation": "proximity"}),
    "FED-CD vote": ("fedcd", {"aggregation": "vote"}),
    "F-CMs strength vote": ("fcm", {}),
    "FedNGM merge": ("fedngm", {}),
}
#: Per method, its six-client benchmark at full size.
BENCHMARKS: dict[str, dict[str, Any]] = {
    "fedcdnv": {"network": "sachs", "reference": False},
    "fedcd": {"network": "asia", "alone": "none"},
    "fcm": {"network": "asia", "initial_clients": 6, "clients_per_round": 6, "rounds": 2},
    "fedngm": {"dataset": "synthetic", "variables": 20, "samples": 20_000, "epochs": 3},
}
#: What ``--quick`` keeps of a benchmark over the method's own quick settings
#: (:attr:`~fedstruct.experiments.runs.Runnable.quick`, a run of seconds): six
#: clients there from round 1, enough variables for six FedNGM sub-populations.
_QUICK_KEEPS: dict[str, dict[str, Any]] = {
    "fcm": {"initial_clients": 6, "clients_per_round": 6, "arrival_round": 0},
    "fedngm": {"variables": 20, "samples": 6000},
}


class AdversarialClient:
    """A client that answers honestly, then perturbs every graph in its reply.

    Graphs are the reply arrays its handler declares as endpoint-mark matrices
    (``handles(graph_arrays=...)``), or FED-CD's ``gamma``/``theta`` belief logits.

    Parameters
    ----------
    inner
        The honest client (its reply passes its own privacy audit first).
    rate
        Share of the graph's edges to modify in each reply.
    rng
        The adversary's generator.
    """

    def __init__(self, inner: Client, rate: float, rng: np.random.Generator) -> None:
        self.inner = inner
        self.rate = rate
        self.rng = rng

    @property
    def name(self) -> str:
        """The honest client's name."""
        return self.inner.name

    def handle(self, message: Message) -> Message:
        """The honest reply with every graph in it perturbed."""
        reply = self.inner.handle(message)
        arrays = dict(reply.arrays)
        for key in self.inner.graph_arrays(message.kind) & set(arrays):
            names = [str(k) for k in range(len(arrays[key]))]
            arrays[key] = perturb_graph(Graph(names, arrays[key]), self.rate, self.rng).marks
        if {"gamma", "theta"} <= set(arrays):
            arrays["gamma"], arrays["theta"] = self._beliefs(arrays["gamma"], arrays["theta"])
        return Message(reply.kind, arrays, reply.config, reply.metrics)

    def _beliefs(self, gamma: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """FED-CD's beliefs with the graph they imply (ENCO's final graph,
        :meth:`~fedstruct.methods.fedcd.learner.Beliefs.adjacency`) perturbed: an edge
        the lie adds or reverses gets belief :data:`BELIEF` (γ and θ), an edge it
        removes ``1 - BELIEF`` (γ); every other belief stays the client's own."""
        edges = Beliefs(gamma, theta).adjacency()  # θ is antisymmetric: no two-cycle
        names = [str(k) for k in range(len(edges))]
        lied = perturb_graph(Graph.from_dag_matrix(names, edges), self.rate, self.rng)
        lied_edges = lied.directed()
        logit = float(np.log(BELIEF / (1 - BELIEF)))
        gamma, theta = gamma.copy(), theta.copy()
        added, removed = lied_edges & ~edges, edges & ~lied_edges
        gamma[added], theta[added], theta[added.T] = logit, logit, -logit
        gamma[removed] = -logit
        return gamma, theta

    def get_state(self) -> dict[str, Any]:
        """The honest client's state."""
        return self.inner.get_state()

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore the honest client's state."""
        self.inner.set_state(state)


class AdversarialBackend(LocalBackend):
    """In-process, with the clients named in ``adversaries`` lying about their graphs.

    Parameters
    ----------
    adversaries
        Names of the clients that send perturbed graphs.
    rate
        Share of edges each of them modifies per reply.
    seed
        Seed of their perturbations.
    """

    def __init__(self, adversaries: Collection[str], rate: float, seed: int) -> None:
        self.adversaries = set(adversaries)
        self.rate = rate
        self.seed = seed

    def run(
        self,
        server_fn: Callable[[Grid], Any],
        method: Federated,
        clients: Sequence[ClientData] | Sequence[str],
        participation: Participation | None,
        seed: int,
    ) -> Any:
        """Run ``server_fn`` on a :class:`LocalGrid` whose adversaries lie."""
        members: list[Any] = []
        for k, data in enumerate(clients):
            client = method.make_client(data)  # type: ignore[arg-type]
            if client.name in self.adversaries:
                rng = np.random.default_rng([self.seed, k, 0xBAD])
                client = AdversarialClient(client, self.rate, rng)
            members.append(client)
        return server_fn(LocalGrid(members, participation, seed))


def truth_of(method: str, settings: Any) -> Graph:
    """The graph each method's run scores against (module docstring)."""
    if method == "fedcdnv":
        return build_setting(settings).truth
    if method == "fedcd":
        return source(settings)[0]
    if method == "fcm":
        return concept_data(settings)[0].graph
    dataset = fedngm_federation(settings).dataset
    return dataset.graph


def robustness_runs(
    adversaries: Sequence[int], rate: float, seeds: Sequence[int], quick: bool = False
) -> dict[str, list[float]]:
    """Every aggregator with each number of adversaries (the first clients): the SHD
    of the federated graph to the truth, per seed (variables the federated graph lacks
    count as isolated in it)."""
    results: dict[str, list[float]] = {}
    for label, (method, changes) in AGGREGATORS.items():
        entry = runnable(method)
        for k in adversaries:
            for seed in seeds:
                layer = dict(BENCHMARKS[method])
                if quick:
                    layer.update({**entry.quick, **_QUICK_KEEPS.get(method, {})})
                layer.update({**changes, "clients": 6, "seed": seed})
                settings = apply_settings(entry.settings(), layer, method=method)
                model = entry.method(settings)
                liars = entry.client_names(settings)[:k]
                with torch_threads(1):
                    model.fit(entry.build_clients(settings),
                              backend=AdversarialBackend(liars, rate, seed))  # fmt: skip
                truth = truth_of(method, settings)
                if method == "fedngm":  # the merge is over the common variables only
                    truth = truth.restrict(model.graph_.names)
                distance = float(shd(*aligned(truth, model.graph_)))
                results.setdefault(f"{label}, {k} of 6 lying", []).append(distance)
    return results


def _robustness(quick: bool, out: Path) -> RecipeReport:
    """The harness (module docstring): 0, 1, 2 adversaries of 6, 30 % of edges."""
    seeds = range(1) if quick else range(3)
    results = robustness_runs((0, 1, 2), 0.3, seeds, quick)
    rows = [
        {"name": label, "federated_shd": float(np.mean(v)), "federated_shd_std": float(np.std(v))}
        for label, v in results.items()
    ]
    plural = "s" * (len(seeds) > 1)
    title = f"SHD of the federated graph, 0-2 of 6 clients lying ({len(seeds)} seed{plural})"
    table = write_results(out, rows, ["federated_shd"], title)
    return RecipeReport(table, out)


register_recipe(
    Recipe(
        "aggregator-robustness",
        "Every graph aggregator with 0, 1, 2 of 6 clients sending perturbed graphs: SHD",
        _robustness,
    )
)
