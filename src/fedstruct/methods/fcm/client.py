"""The F-CMs client: describes what it supervises, trains its modules, reports losses.

A client's rows hold its input features and its label columns: the columns it
``supervises`` (concepts and, if it has them, the task; ``-1`` marks a missing
label). Every other column is an input feature. It holds out a share of its rows
(``validation_fraction``) for the global validation loss. Nothing it sends is a row:
its concept names, its graph (``ClientData.graph``), its row count, model parameters
and loss sums.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from fedstruct.data.client import ClientData
from fedstruct.errors import DataError, UnknownVariableError
from fedstruct.fl import Client, Message, handles, holdout_split
from fedstruct.fl.device import resolve_device
from fedstruct.fl.features import CENTER, FeatureColumns, FeatureEncoder, site_summary
from fedstruct.fl.message import config_entries
from fedstruct.fl.secagg.planes import PLANES, plane_names, planes
from fedstruct.graphs.combine import vote_terms
from fedstruct.methods.fcm.config import FCMConfig
from fedstruct.methods.fcm.interventions import effect_sums, intervention_counts
from fedstruct.methods.fcm.model import ENCODER, ConceptModel, ModelSpec, module_key, node_of
from fedstruct.methods.fcm.train import (
    PrivateSGD,
    label_matrix,
    private_schedule,
    train_local,
    validation_losses,
)
from fedstruct.privacy.dp import PrivacyLedger

__all__ = [
    "CURVE",
    "DESCRIBE",
    "EFFECT",
    "EVALUATE",
    "FRAME",
    "ORDER",
    "STATISTICS",
    "SUMS",
    "TRAIN",
    "VOTE",
    "FCMClient",
    "LocalConceptData",
    "evaluate_entries",
    "input_columns",
    "input_frame",
    "intervention_sums",
]

DESCRIBE = "fcm.describe"
TRAIN = "fcm.train"
EVALUATE = "fcm.evaluate"
STATISTICS = "fcm.statistics"
#: Prefix of the input encoding's arrays in a TRAIN or EVALUATE message.
ENCODING = "features."
#: Secure aggregation: a config key of DESCRIBE (send no graph and no row count: they
#: come as the sums of :data:`VOTE`) and TRAIN (answer the module-wise summands).
SUMS = "sums"
#: Secure aggregation: the client's terms of the strength vote over the names of a
#: VOTE request's :data:`FRAME` config (:meth:`FCMClient.vote`).
VOTE = "fcm.vote"
FRAME = "frame"
#: The arrays of a VOTE reply: 0/1 planes of endpoint-mark matrices, checked as graphs.
VOTE_PLANES = (*plane_names("marks"), *plane_names("absent"), *plane_names("observed"))


def input_columns(features: Sequence[str]) -> FeatureColumns:
    """The input columns as :mod:`fedstruct.fl.features` sees them: every input is a
    number (a categorical or ordinal input enters as its code, as without scaling)."""
    return FeatureColumns(continuous=tuple(features))


def input_frame(rows: pd.DataFrame, features: Sequence[str]) -> pd.DataFrame:
    """The input columns of ``rows`` as floats, a missing value NaN (an integer
    column's code ``-1`` is a missing level)."""
    out = {}
    for f in features:
        values = rows[f].to_numpy()
        if values.dtype.kind in "iu":
            values = np.where(values < 0, np.nan, values.astype(np.float64))
        out[f] = np.asarray(values, dtype=np.float64)
    return pd.DataFrame(out, index=rows.index)


class LocalConceptData:
    """A client's features and labels, checked, split into training and held-out rows.

    Parameters
    ----------
    data
        The client's rows; ``data.supervised`` names its label columns.
    task
        The federation's task variable.
    cardinalities
        Number of states of every concept and the task.
    validation_fraction
        Share of rows held out (drawn with ``seed`` and the client's name).
    seed
        The run's seed.

    Raises
    ------
    UnknownVariableError
        If the client supervises a variable outside ``cardinalities``.
    DataError
        If the client has no feature column, no known concept or task label, or a
        label code outside ``-1..k-1``.
    """

    def __init__(
        self,
        data: ClientData,
        task: str,
        cardinalities: Mapping[str, int],
        validation_fraction: float,
        seed: int,
    ) -> None:
        self.name = data.name
        unknown = [v for v in data.supervised if v not in cardinalities]
        if unknown:
            raise UnknownVariableError(
                f"client {data.name!r} supervises {unknown}, which are not concepts or the task "
                f"of the federation; known: {sorted(cardinalities)}"
            )
        self.features = tuple(c for c in data.variables if c not in data.supervised)
        if not self.features:
            raise DataError(
                f"client {data.name!r} has no input feature column: every column is a label"
            )
        labels = data.rows[list(data.supervised)]
        for col in labels.columns:
            codes = labels[col].to_numpy()
            k = int(cardinalities[col])
            bad = (codes < -1) | (codes >= k) | (codes != np.round(codes))
            if bad.any():
                raise DataError(
                    f"client {data.name!r}: column {col!r} has label {codes[bad][0].item()!r}; "
                    f"labels must be integer codes 0..{k - 1}, or -1 for a missing label"
                )
        known = [c for c in labels.columns if (labels[c].to_numpy() >= 0).any()]
        if not known:
            raise DataError(
                f"client {data.name!r} has neither concept nor task labels; give it at least "
                "one supervised column with known labels, or leave it out of the federation"
            )
        self.concepts = tuple(c for c in known if c != task)
        self.has_task = task in known
        self.graph = data.graph
        kept, held = holdout_split(data.n_rows, validation_fraction, seed, data.name)
        self.inputs = data.rows.iloc[kept][list(self.features)]
        self.inputs_val = data.rows.iloc[held][list(self.features)]
        self.x = torch.from_numpy(self.inputs.to_numpy(dtype=np.float32, copy=True))
        self.x_val = torch.from_numpy(self.inputs_val.to_numpy(dtype=np.float32, copy=True))
        self._encoded_with: dict[str, np.ndarray] | None = None
        self.labels = labels.iloc[kept].astype(np.int64)
        self.labels_val = labels.iloc[held].astype(np.int64)

    @property
    def n_rows(self) -> int:
        """Training rows."""
        return len(self.x)

    def summary(self, center: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """The statistics step's answer: counts, sums and centred sums of squares of
        the training rows' inputs (about ``center`` when the server sends one:
        :func:`~fedstruct.fl.features.site_summary`)."""
        columns = input_columns(self.features)
        return site_summary(input_frame(self.inputs, self.features), columns, center)

    def encode_with(self, encoding: Mapping[str, np.ndarray]) -> None:
        """Re-encode the inputs with the federated encoding a message carries (once
        per encoding: standardised, imputed, missing indicators)."""
        if self._encoded_with is not None and _same(self._encoded_with, encoding):
            return
        encoder = FeatureEncoder.from_arrays(input_columns(self.features), encoding, ENCODING)
        where = f"client {self.name!r}"
        for attr, rows in (("x", self.inputs), ("x_val", self.inputs_val)):
            frame = input_frame(rows, self.features)
            setattr(self, attr, torch.from_numpy(encoder.encode(frame, where)))
        self._encoded_with = dict(encoding)

    def trainable(self, spec: ModelSpec) -> list[str]:
        """The model nodes this client can supervise (its ``I^(k)``, and the task)."""
        own = set(self.concepts) | ({spec.task} if self.has_task else set())
        return [n for n in spec.nodes if n in own]


class FCMClient(Client):
    """One F-CMs participant (Algorithm 1, client side)."""

    def __init__(
        self,
        data: ClientData,
        *,
        task: str,
        cardinalities: Mapping[str, int],
        config: FCMConfig,
        seed: int,
    ) -> None:
        super().__init__(data, seed=seed)
        self.config = config
        self.device = resolve_device(config.device)
        self.local = LocalConceptData(data, task, cardinalities, config.validation_fraction, seed)
        if not config.scales_inputs:
            _require_complete_inputs(self.local)
        self.ledger = PrivacyLedger()
        names = [*self.local.concepts, *self.local.features]
        graph_names = list(data.graph.names) if data.graph is not None else []
        #: Bound of a describe reply: the graph's marks, the names sent, two metrics.
        self.describe_bound = len(graph_names) ** 2 + config_entries([*names, *graph_names]) + 2

    @handles(DESCRIBE, max_entries=lambda c, m: c.describe_bound, graph_arrays=("graph",))
    def describe(self, msg: Message) -> Message:
        """Its concept index set ``I^(k)``, task supervision, graph and row count
        (Algorithm 1, lines 3-5)."""
        arrays = {}
        config: dict = {
            "concepts": list(self.local.concepts),
            "features": list(self.local.features),
        }
        graph = self.local.graph
        metrics = {"n": self.local.n_rows, "has_task": int(self.local.has_task)}
        if graph is not None:
            arrays["graph"] = graph.marks.copy()
            config["graph_names"] = list(graph.names)
        if msg.config.get(SUMS):  # the graph and the row count come only as VOTE sums
            arrays, metrics = {}, {"has_task": metrics["has_task"]}
        return Message(DESCRIBE, arrays=arrays, config=config, metrics=metrics)

    @handles(
        VOTE,
        max_entries=lambda c, m: 3 * PLANES * len(m.config.get(FRAME, [])) ** 2,  # type: ignore[arg-type]
        graph_arrays=VOTE_PLANES,
        summable=True,
    )
    def vote(self, msg: Message) -> Message:
        """Its terms of the strength vote (§4.2.1) over the request's frame of names,
        each ``n`` times an endpoint-mark matrix, sent as 0/1 planes
        (:mod:`fedstruct.fl.secagg.planes`, which the audit checks as graphs): its
        graph's marks (``2 S + S^T`` for its adjacency ``S``), the pairs it observes
        without an edge (``obs (1 - S - S^T)``) and the pairs it observes
        (:func:`~fedstruct.graphs.combine.vote_terms`; zeros without a graph). The sums
        are exact integers."""
        frame = [str(v) for v in msg.config[FRAME]]  # type: ignore[union-attr]
        size = len(frame)
        graph = self.local.graph
        n = 0 if graph is None else self.local.n_rows
        marks = absent = observed = np.zeros((size, size), dtype=np.int64)
        if graph is not None:
            inside = [v for v in graph.names if v in frame]
            position = np.asarray([frame.index(v) for v in inside], dtype=np.intp)
            s, obs = vote_terms(graph.restrict(inside), position, size)
            marks = np.rint(2 * s + s.T).astype(np.int64)
            absent = np.rint(obs * (1.0 - s - s.T)).astype(np.int64)
            observed = obs.astype(np.int64)
        arrays = {**planes("marks", n, marks), **planes("absent", n, absent)}
        return Message(VOTE, arrays={**arrays, **planes("observed", n, observed)})

    @handles(
        STATISTICS,
        max_entries=lambda c, m: input_columns(c.local.features).summary_entries,
        summable=True,
    )
    def statistics(self, msg: Message) -> Message:
        """Its inputs' counts, sums and centred sums of squares (the statistics step,
        :attr:`~fedstruct.methods.fcm.config.FCMConfig.input_scaling`; about the
        request's ``center`` when it has one)."""
        return Message(STATISTICS, arrays=self.local.summary(msg.arrays.get(CENTER)))

    def _model(self, msg: Message) -> tuple[ModelSpec, ConceptModel]:
        """The broadcast model, the inputs encoded with the message's encoding first
        when it carries one."""
        encoding, weights = FeatureEncoder.split(msg.arrays, ENCODING)
        if encoding:
            self.local.encode_with(encoding)
        spec = ModelSpec.from_json(str(msg.config["spec"]))
        model = ConceptModel(spec)
        model.load_arrays(weights)
        return spec, model.to(self.device)

    @handles(
        TRAIN,
        max_entries=lambda c, m: sum(int(np.size(a)) + 1 for a in m.arrays.values()) + 5,
        summable=True,
    )
    def train(self, msg: Message) -> Message:
        """``E`` local epochs on the broadcast model, unsupervised modules frozen;
        replies with the encoder and the modules it trained (§4.2.3).

        With DP, the client trains with DP-SGD while its ledger allows another
        round within its total ε, and otherwise sends no parameters.
        """
        spec, model = self._model(msg)
        trainable = self.local.trainable(spec)
        settings = {
            "trainable": trainable,
            "epochs": self.config.local_epochs,
            "batch_size": self.config.batch_size,
            "learning_rate": self.config.learning_rate,
            "concept_weight": self.config.concept_weight,
            "intervention_rate": self.config.train_intervention_rate,
            "rng": self.rng(msg),
            "freeze": self.config.freeze_unsupervised,
        }
        x, truth = self.local.x, label_matrix(self.local.labels, spec)
        budget = self.config.dp_budget()
        metrics: dict[str, float] = {"n": self.local.n_rows}
        if budget is None:
            loss = train_local(model, x, truth, **settings)
        else:
            q, steps = private_schedule(len(x), self.config.batch_size, self.config.local_epochs)
            planned = self.config.dp_rounds or self.config.rounds
            noise = budget.noise_multiplier(q, planned * steps)
            if not self.ledger.allows(budget, noise, q, steps):
                spent = self.ledger.epsilon(budget.delta)
                if msg.config.get(SUMS):
                    return _module_summands(model, {}, 0, float("nan"), {"epsilon": spent})
                return Message(TRAIN, metrics={"n": 0, "loss": float("nan"), "epsilon": spent})
            private = PrivateSGD(noise, budget.max_grad_norm)
            loss = train_local(model, x, truth, private=private, **settings)
            self.ledger.record(noise, q, steps)
            metrics["epsilon"] = self.ledger.epsilon(budget.delta)
        updated = {module_key(n) for n in trainable} if self.config.freeze_unsupervised else None
        arrays = {
            k: v
            for k, v in model.state_arrays().items()
            if k.startswith(ENCODER) or updated is None or node_of(k) in updated
        }
        if msg.config.get(SUMS):
            extra = {k: v for k, v in metrics.items() if k == "epsilon"}
            return _module_summands(model, arrays, self.local.n_rows, loss, extra)
        return Message(
            TRAIN,
            arrays=arrays,
            metrics={**metrics, "loss": loss},
        )

    def get_state(self) -> dict:
        """The DP ledger (the steps taken so far), when training with DP."""
        return {"ledger": list(self.ledger.history)} if self.ledger.history else {}

    def set_state(self, state: dict) -> None:
        """Restore the DP ledger."""
        self.ledger = PrivacyLedger(state.get("ledger", ()))

    @handles(EVALUATE, max_entries=lambda c, m: evaluate_entries(m), summable=True)
    def evaluate(self, msg: Message) -> Message:
        """Eq. (2) and task-loss sums, and correct task and concept predictions, on the
        held-out rows; with a concept model, the sums of its intervention curve and of
        CaCE's terms there (:func:`intervention_sums`)."""
        spec, model = self._model(msg)
        n = len(self.local.x_val)
        sums = intervention_sums(
            model, self.local.x_val.to(self.device), label_matrix(self.local.labels_val, spec),
            [str(v) for v in msg.config.get(ORDER, [])],  # type: ignore[union-attr]
            self.config.intervention_policy, self.rng(msg, stream=1),
        )  # fmt: skip
        if n == 0:
            return Message(EVALUATE, metrics={"n": 0, "loss_sum": 0.0, "task_loss_sum": 0.0,
                                              "n_task": 0, "task_correct": 0.0,
                                              "concept_correct": 0.0, "n_concept": 0,
                                              **sums})  # fmt: skip
        truth = label_matrix(self.local.labels_val, spec)
        x, truth = self.local.x_val.to(self.device), truth.to(self.device)
        losses = validation_losses(model, x, truth, self.config.concept_weight)
        n_task = int((truth[:, -1] >= 0).sum())
        return Message(
            EVALUATE,
            metrics={
                "n": n,
                "loss_sum": losses["loss"] * n,
                "task_loss_sum": losses["task_loss"] * n_task,
                "n_task": n_task,
                "task_correct": losses["task_correct"],
                "concept_correct": losses["concept_correct"],
                "n_concept": losses["concept_known"],
                **sums,
            },
        )


#: A config key of EVALUATE: the concepts in the ``graph_level`` order (the server's
#: aggregated graph's levels).
ORDER = "order"
#: Prefixes of EVALUATE's metrics: ``curve:<t>`` rows whose task state is right after
#: ``t`` interventions; ``effect:<j>:<s>:<y>`` the sum of ``p(Y = y | do(C_j = s))``
#: over the rows (``j``: the concept's index in the spec).
CURVE, EFFECT = "curve:", "effect:"


def evaluate_entries(msg: Message) -> int:
    """The bound of an EVALUATE reply: eight sums, the curve's points and CaCE's terms
    for the broadcast spec."""
    spec = ModelSpec.from_json(str(msg.config["spec"]))
    k_task = spec.cardinalities[spec.task]
    terms = sum(spec.cardinalities[c] * k_task for c in spec.concepts)
    return 8 + len(spec.concepts) + 1 + terms


def intervention_sums(
    model: ConceptModel, x: torch.Tensor, truth: torch.Tensor, order, policy: str, seed
) -> dict[str, float]:
    """A client's summable terms of the intervention curve (``policy``, on its rows
    with a task label, intervening only where it has the concept's label) and of
    CaCE (every row), over every concept of the model; none for the opaque model,
    whose task reads no concept."""
    spec = model.spec
    if spec.architecture == "opaque" or not spec.concepts:
        return {}
    concepts = list(spec.concepts)
    curve = intervention_counts(model, x, truth, concepts, policy, order, seed)
    out = {f"{CURVE}{t}": float(c) for t, c in enumerate(curve.correct)}
    for j, sums in enumerate(effect_sums(model, x, concepts).values()):
        for (s, y), value in np.ndenumerate(sums):
            out[f"{EFFECT}{j}:{s}:{y}"] = float(value)
    return out


def _module_summands(
    model: ConceptModel,
    trained: Mapping[str, np.ndarray],
    n: int,
    loss: float,
    extra: Mapping[str, float],
) -> Message:
    """The TRAIN reply of a secure sum (§4.2.3's module-wise average as a ratio of
    sums): for every parameter of the broadcast model ``n w`` and the metric
    ``count:<name>`` = ``n`` where this client trained it, zeros and 0 where it did
    not, so that the sums run over the clients that hold each module; the loss and
    ``trained`` (1) when it trained, 0 otherwise; ``out_of_budget`` (DP)."""
    arrays, counts = {}, {}
    for name, value in model.state_arrays().items():
        held = name in trained
        arrays[name] = n * np.asarray(trained[name], np.float64) if held else np.zeros(value.shape)
        counts[f"count:{name}"] = n if held else 0
    metrics = {
        **counts,
        "trained": int(n > 0),
        "loss": float(loss) if n > 0 else 0.0,
        **({"epsilon": float(extra["epsilon"]), "out_of_budget": int(n == 0)} if extra else {}),
    }
    return Message(TRAIN, arrays=arrays, metrics=metrics)


def _require_complete_inputs(local: LocalConceptData) -> None:
    """Raw inputs (``input_scaling="none"``) cannot hold a missing value.

    Raises
    ------
    DataError
        Naming the first input column with one, and the fix.
    """
    for frame in (local.inputs, local.inputs_val):
        gaps = input_frame(frame, local.features).isna().sum()
        if gaps.any():
            column = str(gaps.index[int(np.flatnonzero(gaps.to_numpy())[0])])
            raise DataError(
                f"client {local.name!r}: input column {column!r} has {int(gaps[column])} "
                "missing values, and input_scaling='none' imputes none; use "
                "input_scaling='federated' (or 'auto')"
            )


def _same(a: Mapping[str, np.ndarray], b: Mapping[str, np.ndarray]) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
