"""Robustness of every graph aggregator to clients that send a perturbed graph.

F-CMs' paper studies graph perturbation for its own vote only (App. E.6). The
``aggregator-robustness`` recipe (issue 21) measures it for every aggregator of the
library on one harness: each method runs on its own benchmark federation with six
clients, of which 0, 1 or 2 are *adversaries* (:class:`AdversarialBackend`): they
compute their honest reply, then replace every graph in it by a perturbed one
(:func:`~fedstruct.graphs.perturb.perturb_graph`: a share ``rate`` of the edges
reversed, removed or added) before it leaves. Everything else they send (sample
sizes, p-values, weights) stays honest: only the graph lies. The adversaries lie in
one of two ways:

* **independent**: each perturbs each graph it sends on its own, with its own
  generator, so two liars rarely touch the same pair;
* **colluding** (:class:`Collusion`): they agree on one lie, the harder case for a
  vote. It is drawn once, from a generator they share, by perturbing the first graph
  with an edge that one of them sends, and kept as *claims* over variable names: the
  marks the lie gives each pair it changed. Every colluder then imposes those claims
  on every graph it sends (pairs of variables it lacks are skipped), so on each
  claimed pair they all send the same thing, whatever their own graphs say.

The table gives the SHD of the federated graph to the truth and its adjacency errors
(:data:`COLUMNS`), per aggregator, kind and number of adversaries. The aggregators:

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

from fedstruct.data.checks import fraction
from fedstruct.data.client import ClientData
from fedstruct.errors import ProtocolError
from fedstruct.fl.backend import Federated, LocalBackend
from fedstruct.fl.client import Client
from fedstruct.fl.grid import Grid, LocalGrid, torch_threads
from fedstruct.fl.message import Message, from_json_bytes
from fedstruct.fl.participation import Participation
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.metrics import edge_scores, shd
from fedstruct.graphs.perturb import perturb_graph
from fedstruct.methods.fedcd.learner import Beliefs
from fedstruct.methods.fedngm.schema import Schema
from fedstruct.runs.compare import count_done, write_results
from fedstruct.runs.contract import runnable
from fedstruct.runs.recipes import Recipe, RecipeReport, register_recipe
from fedstruct.runs.settings import apply_settings
from fedstruct.runs.sites import aligned

__all__ = [
    "AGGREGATORS",
    "BENCHMARKS",
    "COLUMNS",
    "MODES",
    "RATE",
    "AdversarialBackend",
    "AdversarialClient",
    "Collusion",
]

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
#: How the adversaries lie: each on its own, or all the same lie (:class:`Collusion`).
MODES = ("independent", "colluding")
#: Share of its graph's edges an adversary perturbs, unless the recipe is given ``rate``.
RATE = 0.3
#: The table's columns: the SHD (pairs whose marks differ) and the adjacency errors
#: (pairs adjacent in one graph only). Where the federated graph has most true edges
#: with a wrong mark (FedCDnv's PAGs), a lie that removes one trades one SHD error
#: for another: only the second column shows it.
COLUMNS = ("federated_shd", "adjacency_errors")
#: Per method, its six-client benchmark at full size. FED-CD's is cut from its
#: defaults (5 rounds of 2 epochs of 1000 + 100 steps, ~4 min a fit) to 3 rounds of
#: 2 epochs of 200 + 50 steps (~21 s): its federated graph is then well below the
#: empty graph's SHD (3-4 against asia's 8 edges). ``threads=1``: ENCO otherwise
#: takes every core whatever :func:`~fedstruct.fl.grid.torch_threads` says, and
#: its spin-waiting thread pool ran a quick fit 70 times slower on a busy machine.
BENCHMARKS: dict[str, dict[str, Any]] = {
    "fedcdnv": {"network": "sachs", "reference": False},
    "fedcd": {
        "network": "asia",
        "alone": "none",
        "rounds": 3,
        "epochs_per_round": 2,
        "model_steps": 200,
        "graph_steps": 50,
        "threads": 1,
    },
    "fcm": {"network": "asia", "initial_clients": 6, "clients_per_round": 6, "rounds": 2},
    "fedngm": {"dataset": "synthetic", "variables": 20, "samples": 20_000, "epochs": 3},
}
#: What ``--quick`` keeps of a benchmark over the method's own quick settings
#: (:attr:`~fedstruct.runs.contract.Runnable.quick`, a run of seconds): six
#: clients there from round 1, enough variables for six FedNGM sub-populations.
_QUICK_KEEPS: dict[str, dict[str, Any]] = {
    "fcm": {"initial_clients": 6, "clients_per_round": 6, "arrival_round": 0},
    "fedngm": {"variables": 20, "samples": 6000},
}


class Collusion:
    """The one lie that colluding adversaries agree on (module docstring).

    Models adversaries who coordinate, the case a majority vote is weakest against:
    on every pair the lie changes they all send the same marks, so their votes add
    up on those pairs instead of scattering over different ones.

    Parameters
    ----------
    rate
        Share of the edges of the graph the lie is drawn on that it modifies.
    rng
        The generator the colluders share; it draws the lie once.

    Attributes
    ----------
    claims
        ``(a, b) -> (mark at b, mark at a)`` for each pair of variable names the lie
        changed (:mod:`fedstruct.graphs.graph`'s marks); empty until drawn.
    """

    def __init__(self, rate: float, rng: np.random.Generator) -> None:
        self.rate = rate
        self.rng = rng
        self.claims: dict[tuple[str, str], tuple[int, int]] = {}

    def impose(self, graph: Graph) -> Graph:
        """``graph`` with the claims on its pairs (pairs of variables it lacks are
        skipped); the first graph with an edge draws the claims
        (:func:`~fedstruct.graphs.perturb.perturb_graph`)."""
        if not self.claims:
            lie = perturb_graph(graph, self.rate, self.rng)
            changed = lie.marks != graph.marks
            self.claims = {
                (graph.names[i], graph.names[j]): (int(lie.marks[i, j]), int(lie.marks[j, i]))
                for i, j in np.argwhere(np.triu(changed | changed.T, 1))
            }
        marks = graph.marks.copy()
        for (a, b), (at_b, at_a) in self.claims.items():
            if a in graph and b in graph:
                i, j = graph.index(a), graph.index(b)
                marks[i, j], marks[j, i] = at_b, at_a
        return Graph(graph.names, marks)


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
        The adversary's generator (for an independent lie).
    collusion
        The lie it shares with the other colluders; ``None``: it lies independently,
        drawing a new perturbation for each graph it sends.
    """

    def __init__(
        self,
        inner: Client,
        rate: float,
        rng: np.random.Generator,
        collusion: Collusion | None = None,
    ) -> None:
        self.inner = inner
        self.rate = rate
        self.rng = rng
        self.collusion = collusion
        self._last_names: list[str] | None = None

    @property
    def name(self) -> str:
        """The honest client's name."""
        return self.inner.name

    def handle(self, message: Message) -> Message:
        """The honest reply with every graph in it perturbed."""
        reply = self.inner.handle(message)
        arrays = dict(reply.arrays)
        for key in self.inner.graph_arrays(message.kind) & set(arrays):
            names = self._names(message, reply, len(arrays[key]))
            arrays[key] = self._lie(Graph(names, arrays[key])).marks
        if {"gamma", "theta"} <= set(arrays):
            names = self._names(message, reply, len(arrays["gamma"]))
            gamma, theta = arrays["gamma"], arrays["theta"]
            arrays["gamma"], arrays["theta"] = self._beliefs(gamma, theta, names)
        return Message(reply.kind, arrays, reply.config, reply.metrics)

    def _lie(self, graph: Graph) -> Graph:
        """``graph`` perturbed independently, or with the colluders' claims imposed."""
        if self.collusion is None:
            return perturb_graph(graph, self.rate, self.rng)
        return self.collusion.impose(graph)

    def _names(self, message: Message, reply: Message, n: int) -> list[str]:
        """The variable names of a graph of ``n`` variables in ``reply``: the names the
        reply sends with it (``names``: FedCDnv's init, FED-CD; ``graph_names``:
        F-CMs), the schema the server sent (FedNGM's common variables), else the names
        this client sent last (FedCDnv's update, over its init's variables). Only a
        colluder needs them: an independent lie is drawn over positions."""
        if self.collusion is None:
            return [str(k) for k in range(n)]
        found = [reply.config.get("names"), reply.config.get("graph_names")]
        if "schema" in message.config:
            found.append(Schema.from_json(from_json_bytes(message.config["schema"])).names)
        for names in [*found, self._last_names]:
            if isinstance(names, (list, tuple)) and len(names) == n:
                self._last_names = [str(v) for v in names]
                return self._last_names
        raise ProtocolError(f"a {message.kind!r} reply has a graph whose variables are unnamed")

    def _beliefs(
        self, gamma: np.ndarray, theta: np.ndarray, names: Sequence[str] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """FED-CD's beliefs with the graph they imply (ENCO's final graph,
        :meth:`~fedstruct.methods.fedcd.learner.Beliefs.adjacency`, over ``names``;
        default positions) lied about: an edge the lie adds or reverses gets belief
        :data:`BELIEF` (γ and θ), an edge it removes ``1 - BELIEF`` (γ); every other
        belief stays the client's own."""
        edges = Beliefs(gamma, theta).adjacency()  # θ is antisymmetric: no two-cycle
        names = list(names) if names is not None else [str(k) for k in range(len(edges))]
        lied_edges = self._lie(Graph.from_dag_matrix(names, edges)).directed()
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
    collude
        Whether they agree on one lie (:class:`Collusion`, one per run) instead of
        each drawing its own.
    """

    def __init__(
        self, adversaries: Collection[str], rate: float, seed: int, collude: bool = False
    ) -> None:
        self.adversaries = set(adversaries)
        self.rate = rate
        self.seed = seed
        self.collude = collude

    def run(
        self,
        server_fn: Callable[[Grid], Any],
        method: Federated,
        clients: Sequence[ClientData] | Sequence[str],
        participation: Participation | None,
        seed: int,
    ) -> Any:
        """Run ``server_fn`` on a :class:`LocalGrid` whose adversaries lie."""
        collusion = None
        if self.collude:
            collusion = Collusion(self.rate, np.random.default_rng([self.seed, 0xBAD]))
        members: list[Any] = []
        for k, data in enumerate(clients):
            client = method.make_client(data)  # type: ignore[arg-type]
            if client.name in self.adversaries:
                rng = np.random.default_rng([self.seed, k, 0xBAD])
                client = AdversarialClient(client, self.rate, rng, collusion)
            members.append(client)
        return server_fn(LocalGrid(members, participation, seed))


def robustness_runs(
    adversaries: Sequence[int],
    rate: float,
    seeds: Sequence[int],
    quick: bool = False,
    modes: Sequence[str] = MODES,
    progress: bool = True,
) -> dict[str, dict[str, list[float]]]:
    """Every aggregator with each number of adversaries (the first clients), lying in
    each of ``modes`` (:data:`MODES`; once with no adversary): per row, the
    :data:`COLUMNS` of the federated graph against the truth, per seed (variables the
    federated graph lacks count as isolated in it). Rows: ``"<aggregator>, 0 of 6
    lying"`` and ``"<aggregator>, <k> of 6 lying (<mode>)"``. ``progress``: show the
    fits done."""
    results: dict[str, dict[str, list[float]]] = {}
    rows_per_aggregator = sum(len(modes) if k else 1 for k in adversaries)
    total = len(AGGREGATORS) * rows_per_aggregator * len(seeds)
    with count_done("robustness fits", total, enabled=progress) as done:
        for label, (method, changes) in AGGREGATORS.items():
            for k in adversaries:
                for mode in modes if k else modes[:1]:
                    row = results.setdefault(
                        f"{label}, {k} of 6 lying" + (f" ({mode})" if k else ""),
                        {column: [] for column in COLUMNS},
                    )
                    for seed in seeds:
                        scores = _scores(method, changes, k, mode == "colluding", rate, seed, quick)
                        for column, value in zip(COLUMNS, scores, strict=True):
                            row[column].append(value)
                        done()
    return results


def _scores(
    method: str,
    changes: dict[str, Any],
    liars: int,
    collude: bool,
    rate: float,
    seed: int,
    quick: bool,
) -> tuple[float, float]:
    """One fit of :func:`robustness_runs`: ``method``'s benchmark with its first
    ``liars`` clients lying; the federated graph's :data:`COLUMNS` against the truth."""
    entry = runnable(method)
    layer = dict(BENCHMARKS[method])
    if quick:
        layer.update({**entry.quick, **_QUICK_KEEPS.get(method, {})})
    layer.update({**changes, "clients": 6, "seed": seed})
    settings = apply_settings(entry.settings(), layer, method=method)
    source = entry.resolve(settings)
    model = entry.method(settings, source)
    names = list(source.names)[:liars]
    with torch_threads(1):
        model.fit(source.clients(),
                  backend=AdversarialBackend(names, rate, seed, collude=collude))  # fmt: skip
    truth = source.truth
    if truth is None:
        raise ProtocolError(f"{method}'s benchmark data have no graph to score against")
    if method == "fedngm":  # the merge is over the common variables only
        truth = truth.restrict(model.graph_.names)
    truth, graph = aligned(truth, model.graph_)
    pairs = edge_scores(truth, graph)  # adjacencies in one graph only: the rest of both
    return float(shd(truth, graph)), float(pairs.n_true + pairs.n_pred - 2 * pairs.n_correct)


def _robustness(quick: bool, out: Path, seeds: range, rate: float = RATE) -> RecipeReport:
    """The harness (module docstring): 0, 1, 2 adversaries of 6, independent or
    colluding, each perturbing a share ``rate`` of its graph's edges."""
    rate = fraction(rate, "rate")
    results = robustness_runs((0, 1, 2), rate, seeds, quick)
    rows = [
        {"name": label}
        | {c: float(np.mean(v)) for c, v in scores.items()}
        | {f"{c}_std": float(np.std(v)) for c, v in scores.items()}
        for label, scores in results.items()
    ]
    plural = "s" * (len(seeds) > 1)
    title = (
        f"Federated graph vs truth, 0-2 of 6 clients lying, {rate:.0%} of edges "
        f"({len(seeds)} seed{plural})"
    )
    table = write_results(out, rows, COLUMNS, title)
    return RecipeReport(table, out)


register_recipe(
    Recipe(
        "aggregator-robustness",
        "Every graph aggregator with 0, 1, 2 of 6 clients sending perturbed graphs, "
        "independently or colluding: SHD",
        _robustness,
        options=("rate",),
        seed_counts=(1, 3),
    )
)
