"""Hyper-parameters of F-CMs (defaults from the paper's App. D.3 and its code)."""

from __future__ import annotations

from dataclasses import dataclass

from fedstruct.constraints import Interval, OneOf, check_fields
from fedstruct.discovery.knowledge import Knowledge, KnowledgeSetting
from fedstruct.fl.device import AUTO, DeviceName
from fedstruct.graphs.pag import BIDIRECTED_RULES
from fedstruct.privacy.dp import DPBudget
from fedstruct.privacy.settings import refuse_unused

__all__ = [
    "ARCHITECTURES",
    "FEDERATED_REGIMES",
    "GRAPH_BASED",
    "INTERVENTION_POLICIES",
    "REGIMES",
    "FCMConfig",
]

#: The concept-model instantiations (§4.3, App. C) and the opaque baseline.
ARCHITECTURES = ("opaque", "cbm", "cem", "cgm", "c2bm")
#: Instantiations whose modules follow the aggregated DAG (CGM, C2BM).
GRAPH_BASED = ("cgm", "c2bm")
#: Federated training regimes (§5): F-CMs, the static baseline and its re-initialising variant.
FEDERATED_REGIMES = ("fcm", "sfcm", "sfcm-reinit")
#: Every regime of §5: the federated ones, Localized and Centralized (trained alone,
#: :func:`fedstruct.methods.fcm.fit_standalone`).
REGIMES = (*FEDERATED_REGIMES, "local", "central")
#: How input columns are scaled (:attr:`FCMConfig.input_scaling`).
INPUT_SCALINGS = ("auto", "federated", "none")
#: The orders in which concepts are intervened on (:mod:`fedstruct.methods.fcm.interventions`).
INTERVENTION_POLICIES = (
    "graph_level",
    "random",
    "uncertainty",
    "group_uncertainty",
    "optimal_greedy",
)
#: Default concept-module width per instantiation (the reference code's configurations).
CONCEPT_HIDDEN = {"opaque": 8, "cbm": 8, "cem": 8, "cgm": 8, "c2bm": 4}


@dataclass(frozen=True)
class FCMConfig:
    """F-CMs settings.

    Parameters
    ----------
    model
        The instantiation: ``"cbm"``, ``"cem"`` (bipartite), ``"cgm"``, ``"c2bm"``
        (graph-based) or ``"opaque"`` (the OpaqNN baseline: task predicted from the
        encoding, concepts as side outputs).
    regime
        ``"fcm"`` (the paper's method), ``"sfcm"`` (concept space and architecture
        fixed after round 1) or ``"sfcm-reinit"`` (architecture adapted, but every
        parameter re-initialised whenever it changes: retraining from scratch);
        ``"local"`` and ``"central"`` name the non-federated reference regimes, which
        :func:`~fedstruct.methods.fcm.fit_standalone` trains.
    rounds
        Maximum number of communication rounds (App. D.3: 200).
    clients_per_round
        ``|K_t|``, clients sampled per round from the available pool (10).
    local_epochs
        ``E``, local epochs per round (2).
    batch_size
        Rows per Adam mini-batch (512).
    learning_rate
        Adam's learning rate (0.01).
    concept_weight
        ``γ`` of eq. (2), the concept-loss weight (0.8).
    train_intervention_rate
        Probability of replacing a supervised concept's prediction by its label during
        training (App. D.3 says 0.25 after CEM; the reference code uses 0.8).
    patience
        Rounds without a better global validation loss before stopping (10).
    validation_fraction
        Share of each client's rows it holds out to report validation losses.
    graph_memory
        ``"all"``: aggregate the latest graph of every client seen so far (the
        monotone federation of §4.2.2); ``"round"``: only the round's participants
        (§4.2.1 read literally).
    bidirected
        With a graph given to the estimator (``FCM(graph=...)``, e.g. a PAG from
        causal discovery): what happens to a bidirected edge ``x <-> y`` (a latent
        common cause) in the DAG the concept model is built on
        (:data:`~fedstruct.graphs.pag.BIDIRECTED_RULES`): ``drop`` it (default: a
        concept model has no unsupervised nodes, so the latent cannot be kept as a
        node), or ``orient`` it along a topological order.
    freeze_unsupervised
        Freeze modules a client cannot supervise (§4.2.3, App. E.5.2).
    encoder_hidden
        Width of the two-layer input encoder (64).
    concept_hidden
        Width of each concept module (default per architecture: 8, C2BM 4).
    embedding_size
        Concept embedding size of CEM and CGM (8).
    task_hidden
        Width of the task decoder's hidden layer (16).
    dp_epsilon
        If set, clients train with DP-SGD (App. E.4) within this total ε over the
        whole run (not per round, unlike the reference code).
    dp_delta
        δ of DP-SGD's (ε, δ) guarantee (1e-5).
    dp_clip
        DP-SGD's per-sample gradient clipping norm ``C`` (1.0).
    dp_rounds
        Rounds a client plans to train in; its noise is calibrated so that this many
        rounds spend ``dp_epsilon``, and it stops training once another round would
        exceed it. Default: ``rounds`` (it can never run out).
    input_scaling
        How the input columns enter the encoder (:mod:`fedstruct.fl.features`, shared
        with FedAvg): ``"federated"`` (a statistics step before round 1: every site
        sends the count, sum and centred sum of squares of each input column; each
        input is standardised with the pooled mean and deviation, a missing value
        imputed with the mean, 0 once standardised, and given a missing-indicator
        input), ``"none"`` (raw values; a missing one is an error) or ``"auto"``
        (default: ``"none"`` for the paper's protocol data, whose inputs are generated
        features, autoencoder codes mixed with unit noise, on one scale by
        construction, so its results stay the paper's; ``"federated"`` for every other
        table: a user's files or rows given to the estimator).
    knowledge
        Background knowledge (a ``Knowledge`` or a JSON/YAML file,
        docs/knowledge.md). The given concept graph (``graph``) and every site's
        proposed graph file must respect it: one that does not (an edge into an
        earlier tier, a forbidden edge or directed path, a forbidden adjacency, a
        missing required edge) is refused with its edges named
        (:func:`~fedstruct.discovery.knowledge.check_graph`). A graph the run learns
        keeps to it: a site's own FCI graph, and the server's vote (denied edges out,
        required edges in, forbidden paths cut). ``None`` (default): none.
    intervention_policy
        The order in which the intervention curve intervenes on concepts, one at a
        time (:mod:`~fedstruct.methods.fcm.interventions`): ``graph_level`` (default:
        the graph's levels, §5.2), ``random``, ``uncertainty``, ``group_uncertainty``
        or ``optimal_greedy`` (an oracle). Every round's ``val_intervention_auc`` and
        the run's ``intervention_auc`` follow it.
    device
        Where the clients train: ``auto`` (a CUDA GPU when torch finds one, else
        the CPU), ``cpu``, ``cuda`` or ``cuda:N`` (:mod:`fedstruct.fl.device`;
        docs/runtime.md). Messages and saved models hold CPU arrays whatever it is.
    """

    model: str = "c2bm"
    regime: str = "fcm"
    rounds: int = 200
    clients_per_round: int = 10
    local_epochs: int = 2
    batch_size: int = 512
    learning_rate: float = 0.01
    concept_weight: float = 0.8
    train_intervention_rate: float = 0.25
    patience: int = 10
    validation_fraction: float = 0.125
    graph_memory: str = "all"
    bidirected: str = "drop"
    freeze_unsupervised: bool = True
    encoder_hidden: int = 64
    concept_hidden: int | None = None
    embedding_size: int = 8
    task_hidden: int = 16
    dp_epsilon: float | None = None
    dp_delta: float = 1e-5
    dp_clip: float = 1.0
    dp_rounds: int | None = None
    input_scaling: str = "auto"
    knowledge: str | Knowledge | None = None
    intervention_policy: str = "graph_level"
    device: str = AUTO

    def __post_init__(self) -> None:
        check_fields(self, _CONSTRAINTS, "fcm")
        refuse_unused(
            self,
            ("dp_delta", "dp_clip", "dp_rounds"),
            "dp_epsilon",
            "clients train with DP-SGD only within a budget",
        )
        self.dp_budget()  # with DP: validates ε, δ and C

    def dp_budget(self) -> DPBudget | None:
        """The clients' DP budget, or ``None`` without DP."""
        if self.dp_epsilon is None:
            return None
        return DPBudget(float(self.dp_epsilon), float(self.dp_delta), float(self.dp_clip))

    @property
    def module_width(self) -> int:
        """The concept modules' width for this architecture."""
        return self.concept_hidden or CONCEPT_HIDDEN[self.model]

    @property
    def graph_based(self) -> bool:
        """Whether modules follow the aggregated DAG."""
        return self.model in GRAPH_BASED

    @property
    def scales_inputs(self) -> bool:
        """Whether the run has the statistics step (``input_scaling`` is not
        ``"none"``; ``"auto"`` reaching the estimator means a user's table)."""
        return self.input_scaling != "none"


_CONSTRAINTS = {
    "knowledge": KnowledgeSetting(),
    "model": OneOf(ARCHITECTURES),
    "regime": OneOf(REGIMES),
    "graph_memory": OneOf(("all", "round")),
    "bidirected": OneOf(BIDIRECTED_RULES),
    "input_scaling": OneOf(INPUT_SCALINGS),
    "intervention_policy": OneOf(INTERVENTION_POLICIES),
    **{
        name: Interval(int, 1)
        for name in (
            "rounds",
            "clients_per_round",
            "local_epochs",
            "batch_size",
            "patience",
            "encoder_hidden",
            "embedding_size",
            "task_hidden",
        )
    },
    "concept_hidden": Interval(int, 1, allow_none=True),
    "concept_weight": Interval(float, 0, 1),
    "train_intervention_rate": Interval(float, 0, 1),
    "validation_fraction": Interval(float, 0, 1, closed="neither"),
    "dp_rounds": Interval(int, 1, allow_none=True),
    "learning_rate": Interval(float, 0, closed="neither"),
    "device": DeviceName(),
}
