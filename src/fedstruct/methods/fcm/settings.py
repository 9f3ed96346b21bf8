"""Settings of ``fedstruct run fcm`` (defaults: the F-CMs paper's asia protocol)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from fedstruct.constraints import Boolean, Interval, OneOf, check_fields
from fedstruct.errors import ConfigError
from fedstruct.methods.fcm import FCMConfig
from fedstruct.methods.fcm.concepts import (
    AUTOENCODER_INPUTS,
    AUTOENCODER_LAYOUTS,
    AUTOENCODER_ROWS,
    TASKS,
)
from fedstruct.methods.fcm.config import FEDERATED_REGIMES
from fedstruct.runs.contract import FederationSettings

if TYPE_CHECKING:
    from fedstruct.graphs import Graph
    from fedstruct.methods.fcm.sources import ConceptSource, SiteConcepts

__all__ = ["ARRIVALS", "CLIENT_GRAPHS", "DEFAULT_ARRIVAL", "FCMRun"]

#: Round at which the late cohort joins (App. D.3).
ARRIVALS = {"asia": 10, "sachs": 10}
DEFAULT_ARRIVAL = 20
#: Where each client's proposed concept graph comes from (:class:`FCMRun`'s ``client_graphs``).
CLIENT_GRAPHS = ("auto", "given", "fci", "flat")


@dataclass(frozen=True)
class FCMRun(FederationSettings, FCMConfig):
    """Settings of ``fedstruct run fcm`` (defaults: the paper's asia protocol).

    Parameters
    ----------
    network
        The concept data set's network (App. B.1): ``asia``, ``sachs``, ``alarm``,
        ``insurance`` or ``hailfinder``.
    initial_clients
        Clients that take part from round 1 (the initial cohort); the others join late.
    arrival_round
        Round at which the late cohort joins; 0: the paper's (10 for asia and sachs,
        else 20).
    samples
        Rows of the concept data set; 0: the paper's size for the network.
    latent_dim
        Size of the autoencoder's latent code (the inputs); 0: the paper's.
    autoencoder_epochs
        Most training epochs of the autoencoder that makes the inputs.
    autoencoder_patience
        Epochs without a lower training loss before the autoencoder stops.
    autoencoder_input
        What the autoencoder reads per concept: ``codes`` (its state code, the
        reference code) or ``onehot``.
    autoencoder_layout
        ``reference`` (ReLU layers, the code through LeakyReLU(0.1), hidden width =
        latent size) or ``linear_code`` (LeakyReLU layers of width 128, a linear code).
    autoencoder_rows
        Rows the autoencoder is fitted on: ``all`` (the reference code) or ``train``.
    autoencoder_lr
        Adam learning rate of the autoencoder (the reference code's 5e-4).
    autoencoder_task
        Also feed the task to the autoencoder (a diagnostic: one version of the
        reference code does; App. B.1 encodes the concepts only).
    noise
        Weight of the Gaussian noise mixed into the latent codes (App. B.1: 0.5).
    standardise_latent
        Standardise the latent codes before adding the noise.
    paths_per_client
        Ancestral paths to the task each client's supervised sub-graph joins (App. D.1).
    extra_concepts
        Concepts a client supervises besides its paths.
    task_missing
        Share of the clients without task labels.
    new_concept_fraction
        Share of the concepts only the late cohort supervises.
    perturbed_clients
        Share of the clients whose graph is perturbed (App. E.6).
    perturbed_edges
        Share of a perturbed client's edges that are modified.
    client_graphs
        The concept graph each client proposes to the server's vote (§4.2.1; the
        paper's clients each hold one, App. D.1): auto, given, fci or flat.

        - ``auto`` (default): the client's own graph where it has one (the paper's
          protocol: its true sub-graph, perturbed as ``perturbed_clients`` says; a
          user's site: its ``graph:`` file), else the graph it learns from its own
          rows as ``fci`` does (none is learned when ``--graph`` replaces the vote);
        - ``given``: only the graphs clients hold; a site without a ``graph:`` file
          proposes none (the vote may then give the task no parent: a warning says so);
        - ``fci``: every client learns its graph alone from its own concept and task
          columns (:func:`~fedstruct.methods.fcm.sources.own_fci_graph`: FCI
          with the G² test, α = 0.05, one DAG of its PAG's class, bidirected edges
          dropped; on a user's sites the task is made a sink), a given one ignored;
          the "local graphs" of a composition;
        - ``flat``: no client proposes a graph; the model is built on the flat graph,
          every concept a parent of the task and no edge between concepts (the
          bipartite structure of CBMs, §2.1), whatever the clients hold.
    max_epochs
        Epochs of the ``local`` and ``central`` regimes (trained alone).
    inputs
        With a user's files: the input (feature) columns; empty: every column that is
        not a concept or the task.
    concepts
        With a user's files: the concept columns (categorical; a site supervises those
        it has, a missing value is a missing label).
    task
        With a user's files: the task column (categorical).
    metric_rows
        Test rows on which CAS, OIS and NIS are computed (a permutation's first rows,
        drawn from the seed): they cluster and fit helper classifiers, at a cost
        quadratic in the rows.
    concept_metrics_every
        On the paper's protocol, CAS, OIS and NIS of the round's model enter the
        history every this many rounds (on the test rows the run holds; 0: only the
        final model's, in metrics.json). ``val_cace_mean`` and
        ``val_intervention_auc`` enter it every round (from the clients' sums).
    graph
        A concept graph to build the model on instead of aggregating the clients'
        graphs (``--graph``): a graph file (graph.json, DOT, GraphML, BIF) or the
        folder of a run that learned one (e.g. FedCDnv on the same concept and task
        columns); a PAG becomes one DAG of its class (``bidirected``).
    """

    method_name: ClassVar[str] = "fcm"
    bootstrap_refusal: ClassVar[str] = (
        "F-CMs aggregate the concept graphs the clients give, not graphs learned from "
        "their rows, so resampling rows would not change it; --bootstrap is for the "
        "discovery methods fedcdnv and fedcd"
    )
    secure_aggregation_refusal: ClassVar[str] = ""  # modules, votes, losses: sums

    network: str = "asia"
    clients: int = 20
    rounds: int = 200
    initial_clients: int = 10
    arrival_round: int = 0
    samples: int = 0
    latent_dim: int = 0
    autoencoder_epochs: int = 30
    autoencoder_patience: int = 50
    autoencoder_input: str = "onehot"
    autoencoder_layout: str = "linear_code"
    autoencoder_rows: str = "train"
    autoencoder_lr: float = 1e-3
    autoencoder_task: bool = False
    noise: float = 0.5
    standardise_latent: bool = False
    paths_per_client: int = 2
    extra_concepts: int = 1
    task_missing: float = 0.2
    new_concept_fraction: float = 0.3
    perturbed_clients: float = 0.0
    perturbed_edges: float = 0.0
    client_graphs: str = "auto"
    max_epochs: int = 200
    inputs: tuple[str, ...] = ()
    concepts: tuple[str, ...] = ()
    task: str = ""
    metric_rows: int = 500
    concept_metrics_every: int = 10
    graph: str | None = None

    def estimator_params(self, source: ConceptSource | SiteConcepts) -> dict[str, Any]:
        """The settings' estimator parameters for the source's task and labels
        (``local``/``central``: the federated F-CMs settings, which the run does not
        fit), ``input_scaling = "auto"`` as the source's inputs need it, and the graph
        given to the model instead of the clients' vote: ``--graph``, the flat graph
        over the source's concepts (``client_graphs = flat``), or none."""
        from fedstruct.methods.fcm.sources import flat_graph  # it imports these

        task = source.task
        graph: Graph | str | None = self.graph
        if self.client_graphs == "flat":
            graph = flat_graph([v for v in source.cardinalities if v != task], task)
        return {
            **super().estimator_params(source),
            "regime": self.regime if self.regime in FEDERATED_REGIMES else "fcm",
            "input_scaling": (
                source.auto_input_scaling if self.input_scaling == "auto" else self.input_scaling
            ),
            "task": task,
            "cardinalities": source.cardinalities,
            "participation": source.participation(),
            "graph": graph,
        }

    def __post_init__(self) -> None:
        super().__post_init__()
        check_fields(self, _CONSTRAINTS, "fcm")
        self.check_one_source("network", "initial_clients", "arrival_round", "samples")
        if self.from_files and self.regime not in ("fcm", "sfcm", "sfcm-reinit"):
            raise ConfigError(
                f"regime {self.regime!r} pools or isolates the sites' rows for a benchmark; "
                "on a user's files use fcm, sfcm or sfcm-reinit"
            )
        if self.graph and self.client_graphs == "flat":
            raise ConfigError(
                "--graph and client_graphs = flat both give the model's graph; give one"
            )
        if self.graph and self.regime not in ("fcm", "sfcm", "sfcm-reinit"):
            raise ConfigError(
                f"--graph replaces the federation's aggregated graph; regime {self.regime!r} "
                "trains no federation: use fcm, sfcm or sfcm-reinit"
            )
        if self.initial_clients > self.clients:
            raise ConfigError(
                f"initial_clients = {self.initial_clients} must lie in 1..clients ({self.clients})"
            )

    @property
    def arrival(self) -> int:
        """The late cohort's first round."""
        return self.arrival_round or ARRIVALS.get(self.network, DEFAULT_ARRIVAL)


_CONSTRAINTS = {
    "network": OneOf(TASKS),
    "initial_clients": Interval(int, 1),
    "arrival_round": Interval(int, 0),
    "samples": Interval(int, 0),
    "latent_dim": Interval(int, 0),
    "autoencoder_epochs": Interval(int, 1),
    "autoencoder_patience": Interval(int, 1),
    "autoencoder_input": OneOf(AUTOENCODER_INPUTS),
    "autoencoder_layout": OneOf(AUTOENCODER_LAYOUTS),
    "autoencoder_rows": OneOf(AUTOENCODER_ROWS),
    "autoencoder_lr": Interval(float, 0, closed="right"),
    "autoencoder_task": Boolean(),
    "noise": Interval(float, 0),
    "standardise_latent": Boolean(),
    "paths_per_client": Interval(int, 1),
    "extra_concepts": Interval(int, 0),
    "task_missing": Interval(float, 0, 1),
    "new_concept_fraction": Interval(float, 0, 1),
    "perturbed_clients": Interval(float, 0, 1),
    "perturbed_edges": Interval(float, 0, 1),
    "client_graphs": OneOf(CLIENT_GRAPHS),
    "max_epochs": Interval(int, 1),
    "metric_rows": Interval(int, 20),
    "concept_metrics_every": Interval(int, 0),
}
