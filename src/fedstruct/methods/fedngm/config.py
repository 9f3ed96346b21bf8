"""Hyper-parameters of FedNGM (papers/fedngm-neural-graphical-models.txt, §2-3)."""

from __future__ import annotations

from dataclasses import dataclass

from fedstruct.constraints import Boolean, Interval, OneOf, check_fields
from fedstruct.discovery.knowledge import Knowledge, KnowledgeSetting
from fedstruct.fl.device import AUTO, DeviceName
from fedstruct.graphs.undirected import DEPENDENCY_RULES

__all__ = [
    "ALLOCATIONS",
    "CONSTRAINTS",
    "GRAPH_METHODS",
    "GRAPH_SCOPES",
    "INFERENCE_METHODS",
    "ISOLATED_EDGES",
    "SAMPLERS",
    "VARIANTS",
    "FedNGMConfig",
]

#: ``"ngm"``: a merged graph first, then graph-constrained NGMs (§2.1-2.3);
#: ``"ngr"``: no graph, NGRs learn it from the common variables (§2.5).
VARIANTS = ("ngm", "ngr")
#: How an NGM follows its graph: routed hidden units or eq. (1)'s path penalty.
CONSTRAINTS = ("mask", "penalty")
#: Local graph recovery (§2.1): scikit-learn's GraphicalLassoCV or an NGR fit.
GRAPH_METHODS = ("glasso", "partial", "ngr")
#: Edges of a variable the local graph's edge test leaves without a neighbour: its
#: graphical-lasso neighbours (``"glasso"``) or none (``"none"``).
ISOLATED_EDGES = ("glasso", "none")
#: Which rows count in a variable's loss when entries are missing (``missing_loss``).
MISSING_LOSSES = ("neighbours", "entries")
#: Which variables a client recovers its graph over before the master keeps the common
#: nodes: all of its own (the paper's merge, §2.1) or only the common ones.
GRAPH_SCOPES = ("all", "common")
#: How many samples the master draws from each client model (§2.3 vs §2.5).
ALLOCATIONS = ("equal", "proportional")
#: Samplers: Gibbs with residual noise (default) or the NGM paper's ordering sampler.
SAMPLERS = ("gibbs", "ordering")
#: Inference: iterative predict-and-replace (message passing) or input optimisation.
INFERENCE_METHODS = ("message", "gradient")


@dataclass(frozen=True)
class FedNGMConfig:
    """FedNGM settings.

    Parameters
    ----------
    variant
        ``"ngm"`` or ``"ngr"`` (see :data:`VARIANTS`).
    constraint
        How an NGM follows its graph: ``"mask"`` (default) routes hidden units by
        neighbourhood, so paths between non-adjacent variables and self-paths are
        exactly zero (METHODS.md's hard alternative); ``"penalty"`` is eq. (1)'s soft
        path penalty on a dense view. The soft penalty is fragile: a categorical
        output learns its allowed paths only when the self-path weight is small, and
        then isolated variables copy themselves (docs/fedngm.md). NGRs and stitching
        always use the penalty (§2.4-2.5).
    units_per_variable
        Hidden units each variable owns under ``constraint="mask"``.
    hidden
        Width of each hidden layer of the neural view (§3 uses a 2-layer view: one
        hidden layer between input and output).
    penalty
        ``λ`` of eq. (1)-(2): weight of the graph-constrained path norm
        ``‖(Π_l |W_l|) ⊙ S̄‖₁`` (variable level). The reference default of 1 collapses
        predictions to the mean (METHODS.md); the default was tuned on the mixed
        synthetic data (docs/fedngm.md).
    self_weight
        How much more a self-path weighs than a path between non-adjacent variables
        (the diagonal of ``S̄``). With one weight for both, a variable with few
        neighbours learns to copy itself before the other paths collapse to the mean
        (METHODS.md); a heavier diagonal removes self-paths at a mild ``λ``. Used by
        ``constraint="penalty"`` and stitching; an NGR's graph ignores the diagonal,
        so its self-paths weigh ``λ``.
    sparsity
        NGR only (eq. 5): weight of the L1 norm of the symmetrised path matrix.
    epochs
        Epochs of the Adam training of every NGM (clients, global, stitching).
    batch_size
        Rows per Adam mini-batch of every NGM's training.
    min_batches
        The fewest mini-batches an epoch is cut into: when the training rows fill
        fewer batches of ``batch_size``, the batch shrinks to ``ceil(rows /
        min_batches)`` (:func:`~fedstruct.methods.fedngm.train.batch_rows`). Training
        length is counted in epochs, so a site of a few hundred rows (one batch of 256)
        got ``epochs`` Adam steps in all: 60 on anes96's sites, whose NGMs then put
        P(vote = Dole | PID = 6) at 0.59 (data: 0.95) and a held-out log-loss of 0.41
        (pooled logistic regression: 0.28). With 4 batches per epoch (240 steps)
        they reach 0.96 and 0.26-0.28 (docs/fedngm.md, "Small sites"). The default 4
        leaves every data set with at least 4 batches of 256 rows as it was (the
        synthetic recipe's clients have 864 training rows: 4 batches).
    learning_rate
        Adam's learning rate of every NGM's training.
    missing_loss
        With missing entries (site files read with ``missing="keep"``), the rows on
        which a variable's regression loss (eq. 1) counts:
        ``"neighbours"`` (default) those where it and every neighbour of it in the
        graph are observed, so its conditional is learnt from observed inputs only
        (unbiased under MCAR: 20% MCAR on a three-variable chain, its predictions
        stay within 0.1 of the complete-data model's where ``"entries"`` drifts,
        tests/methods/fedngm/test_fedngm_missing.py); ``"entries"`` every row where
        it is observed, a missing input entering at its mean. Without a graph (NGR)
        both are ``"entries"``. No effect on complete data (docs/fedngm.md).
    graph_method
        How a client recovers its local graph (§2.1): ``"glasso"`` (scikit-learn's
        GraphicalLassoCV), ``"partial"`` (tests of the sample partial correlations)
        or ``"ngr"`` (an NGR fit).
    graph_scope
        The variables a client recovers its graph over: ``"all"`` of its own (the
        paper's merge, §2.1) or only the ``"common"`` ones.
    graph_rule
        How a graph given to the estimator (``FedNGM(graph=...)``: a DAG, CPDAG or a
        PAG learned by causal discovery) becomes the undirected graph an NGM is
        constrained by (:data:`~fedstruct.graphs.undirected.DEPENDENCY_RULES`:
        ``moral``, the Markov blankets of one DAG of its class; ``skeleton``).
    glasso_cv
        Cross-validation folds of GraphicalLassoCV (local graphs by ``glasso``).
    graph_max_rows
        The most rows (a seeded subsample) a ``glasso`` or ``partial`` local graph is
        recovered from (10,000: every row of a synthetic client; the edge test below
        gains power with rows).
    edge_level
        Local graphs by ``glasso``: family-wise level of the Fisher-z tests an edge's
        partial correlation must pass (Drton & Perlman 2004; Bonferroni over column
        pairs); ``None`` keeps every non-zero precision entry. The CV-chosen penalty
        alone leaves the merged 30-variable graph nearly complete (310 of 351 edges,
        18 true), the global model over-fits its samples (best epoch 12 of 60) and
        Gibbs sweeps need 17 colour classes. The level is lenient (0.2) because a
        missed edge costs more than a spurious one (docs/fedngm.md).
    isolated_edges
        Local graphs by ``glasso`` or ``partial`` with ``edge_level`` set: what a
        variable gets when the edge test leaves it without a neighbour at a client
        although some marginal correlation of it passes the family-wise test at
        ``isolated_level`` (so it is not independent of the others). ``"glasso"`` (default): its
        neighbours in GraphicalLassoCV's own selection (non-zero precision entries)
        among the variables it is marginally dependent on, the sparse recovery §2.1
        names (uGLAD's graph is a precision matrix's support); ``"none"``: it stays
        isolated (warned at the run). The test has no power for a variable whose
        information is spread over many collinear columns: breast cancer's diagnosis
        at ~110 rows a site (partial correlations 0.17-0.29 given the other 29
        measurements, threshold 0.30-0.34; marginal ones up to 0.8) was isolated at
        every site and predicted as one probability for every row (docs/fedngm.md,
        "Small sites"). Edges the test keeps are unchanged; a variable marginally
        independent of all others stays isolated.
    isolated_level
        Family-wise level of the marginal Fisher-z test (Bonferroni over column pairs)
        that decides, for ``isolated_edges="glasso"``, that a variable the edge test
        isolated is dependent on others. Strict (0.01), since it overrides the edge
        test: at ``edge_level`` 0.2, a column of pure noise beside two correlated ones
        (two sites of 300 rows) was linked; breast cancer's diagnosis
        (marginal correlations up to 0.8 on 110 rows) passes at any level.
    ngr_threshold
        NGR graph recovery: an edge where the symmetrised, max-normalised path
        strength exceeds this share.
    distillation_samples
        Total number of samples the master draws from the client models (§3.2:
        100,000 per client); ``None``: as many as the clients' rows together, but
        at least ``min_distillation_samples`` per client.
    min_distillation_samples
        With ``distillation_samples=None``, the fewest samples drawn per client
        (default 1,000; the paper draws 100,000 per client, §3.2). On anes96 (three
        sites, 755 training rows) the global model distilled from 755 samples put
        the sampled P(Dole) at 0.391 against the data's 0.416, from 3,000 (this
        floor) at 0.412 (on an intermediate graph: 10,000 and 30,000 samples 0.415
        and 0.404), the query and held-out accuracy unchanged (docs/benchmarks.md).
        Each sample costs distillation steps (``epochs`` over the samples), so the
        floor is the smallest size that removed the drift. A client with 1,000 rows
        or more is unaffected; 0: exactly the rows (the recipes' protocol).
    allocation
        ``"equal"`` samples per client (§2.3) or ``"proportional"`` to ``n_k`` (§2.5).
    sampler
        How samples are drawn from a model: ``"gibbs"`` (Gibbs sampling with
        residual noise) or ``"ordering"`` (the NGM paper's ordering sampler).
    burn_in
        Gibbs sweeps before a chain's state is kept.
    soft_targets
        Train the global model on each sample's conditional expectations under the
        client model that drew it (predictions, softmax probabilities) instead of the
        drawn values: eq. (2)'s expected loss with the draw's noise removed
        (:func:`~fedstruct.methods.fedngm.train.conditional_targets`).
    public_weight
        ``γ`` of eq. (3): weight of the regression term on public data, used when the
        master holds public data (0: eq. 2 only). Default 1, one weight per source:
        the master owns the public rows, and on the RAND table and the synthetic
        data they bring the global model within 1.5 % of every client's own model on
        the client's rows (docs/fedngm.md).
    release_threshold
        ``T`` of §2.6: the merged graph and the global model are released only when
        built from at least this many clients.
    inference
        How ``predict`` and ``query`` complete what the evidence leaves unknown
        (:func:`~fedstruct.methods.fedngm.inference.infer`): ``"gradient"`` (default
        since issue 49; input optimisation against the evidence's regression loss) or
        ``"message"`` (iterative predict-and-replace, the default before). On strongly
        dependent continuous data message passing can run to a wrong fixed point
        (ecoli70's E[lacZ | lacA] rises from 0.13 to 3.42 over lacA's range; message
        passing answered 2.14, 2.21, 1.60), the gradient variant stays near the
        evidence's neighbours (docs/fedngm.md, "Queries"). Predicting one variable
        from all the others (the run's metrics) is the same either way.
    inference_steps
        Iterations (message passing: at most, it stops when nothing moves) or Adam
        steps (gradient: each moves an input by at most its step size 0.1, so 100
        reach evidence several deviations out; default 100, 20 before issue 49).
    stitch_hidden
        Stitching (§2.4): new hidden units per layer.
    stitch_init
        Stitching (§2.4): scale of the small random incoming weights of new units.
    validation_fraction
        Share of rows each trainer holds out to pick its best epoch.
    test_fraction
        Share of each client's rows it keeps out of the whole protocol (drawn with the
        seed and its name, :func:`~fedstruct.fl.holdout_split`). With the release the
        master sends each client its own model too, and the client answers with the
        global model's error relative to its own on those rows (a held-out score of
        each site, computed where its rows lie; ``FedNGM.site_scores_``). 0 (the
        paper's protocol, whose test rows are separate): no scoring.
    log_skew
        A continuous variable that is non-negative at every client, whose pooled
        skewness exceeds this and whose ``log(1 + x)`` is skewed less than this is
        modelled as ``log(1 + x)`` (schema transform,
        :func:`~fedstruct.methods.fedngm.schema.pool_summaries`); ``None``: never.
        The default 2 (the skewness of an exponential distribution) picks the RAND
        table's doctor visits (skewness 4.8; 0.5 after the transform), not its
        mostly-zero limitation score ``physlm`` (2.3 either way), and no variable of
        the synthetic data (docs/fedngm.md).
    knowledge
        Background knowledge (a ``Knowledge`` or a JSON/YAML file,
        docs/knowledge.md). The given graph (``graph``) must respect it: one that does
        not (an edge into an earlier tier, a forbidden edge or directed path, a
        forbidden adjacency, a missing required edge) is refused with its edges named
        (:func:`~fedstruct.discovery.knowledge.check_graph`). A graph the graph round
        learns holds every required pair; ``forbidden_adjacent`` is refused there (it
        cannot soundly delete an edge of a concentration graph). ``None`` (default):
        none.
    device
        Where the clients train and sample: ``auto`` (a CUDA GPU when torch
        finds one, else the CPU), ``cpu``, ``cuda`` or ``cuda:N``
        (:mod:`fedstruct.fl.device`; docs/runtime.md). Messages and saved models
        hold CPU arrays whatever it is.
    """

    variant: str = "ngm"
    constraint: str = "mask"
    units_per_variable: int = 8
    hidden: int = 64
    penalty: float = 0.3
    self_weight: float = 10.0
    sparsity: float = 0.5
    epochs: int = 60
    batch_size: int = 256
    min_batches: int = 4
    learning_rate: float = 3e-3
    missing_loss: str = "neighbours"
    graph_method: str = "glasso"
    graph_scope: str = "all"
    graph_rule: str = "moral"
    glasso_cv: int = 3
    graph_max_rows: int = 10_000
    edge_level: float | None = 0.2
    isolated_edges: str = "glasso"
    isolated_level: float = 0.01
    ngr_threshold: float = 0.1
    distillation_samples: int | None = None
    min_distillation_samples: int = 1_000
    allocation: str = "equal"
    sampler: str = "gibbs"
    burn_in: int = 30
    soft_targets: bool = True
    public_weight: float = 1.0
    release_threshold: int = 1
    inference: str = "gradient"
    inference_steps: int = 100
    stitch_hidden: int = 8
    stitch_init: float = 0.05
    validation_fraction: float = 0.1
    test_fraction: float = 0.0
    log_skew: float | None = 2.0
    knowledge: str | Knowledge | None = None
    device: str = AUTO

    def __post_init__(self) -> None:
        check_fields(self, _CONSTRAINTS, "fedngm")


_CONSTRAINTS = {
    "knowledge": KnowledgeSetting(),
    "variant": OneOf(VARIANTS),
    "constraint": OneOf(CONSTRAINTS),
    "graph_method": OneOf(GRAPH_METHODS),
    "missing_loss": OneOf(MISSING_LOSSES),
    "graph_scope": OneOf(GRAPH_SCOPES),
    "isolated_edges": OneOf(ISOLATED_EDGES),
    "graph_rule": OneOf(DEPENDENCY_RULES),
    "allocation": OneOf(ALLOCATIONS),
    "sampler": OneOf(SAMPLERS),
    "inference": OneOf(INFERENCE_METHODS),
    **dict.fromkeys(
        (
            "units_per_variable",
            "hidden",
            "epochs",
            "batch_size",
            "min_batches",
            "graph_max_rows",
            "burn_in",
            "release_threshold",
            "inference_steps",
            "stitch_hidden",
        ),
        Interval(int, 1),
    ),
    "glasso_cv": Interval(int, 2),
    "distillation_samples": Interval(int, 1, allow_none=True),
    "min_distillation_samples": Interval(int, 0),
    "soft_targets": Boolean(),
    **dict.fromkeys(
        ("penalty", "self_weight", "sparsity", "public_weight", "stitch_init"), Interval(float, 0)
    ),
    "log_skew": Interval(float, allow_none=True),
    "learning_rate": Interval(float, 0, closed="neither"),
    "edge_level": Interval(float, 0, 1, closed="neither", allow_none=True),
    "isolated_level": Interval(float, 0, 1, closed="neither"),
    "ngr_threshold": Interval(float, 0, 1, closed="neither"),
    "validation_fraction": Interval(float, 0, 0.5, closed="left"),
    "test_fraction": Interval(float, 0, 1, closed="left"),
    "device": DeviceName(),
}
