"""The FED-CD client: ENCO on its own rows from the broadcast belief; sends only beliefs
(and, for a table with continuous columns, the aggregates of the bins' exchange)."""

from __future__ import annotations

import numpy as np

from fedstruct.data.client import ClientData
from fedstruct.errors import ProtocolError
from fedstruct.fl import Client, Message, handles
from fedstruct.fl.binning import QuantileBinning, QuantileBins
from fedstruct.fl.features import CENTER
from fedstruct.fl.message import config_entries
from fedstruct.fl.progress import show_progress
from fedstruct.methods.fedcd.aggregate import averaged_values, proximity_factor
from fedstruct.methods.fedcd.config import FedCDConfig
from fedstruct.methods.fedcd.enco.learner import ENCO, GRAPH_STAGE, MODEL_STAGE
from fedstruct.methods.fedcd.learner import Beliefs, InterventionalData, final_graph
from fedstruct.methods.fedcd.progress import EVERY, EncoPace

__all__ = [
    "BIN_COUNTS",
    "BIN_CUTS",
    "BIN_GRID",
    "BIN_SUMMARY",
    "FIT",
    "NAMES",
    "REFERENCE",
    "SUMS",
    "WEIGH",
    "FedCDClient",
]

FIT = "fedcd.fit"
#: A FIT config key (secure aggregation): answer the summable products instead of the
#: beliefs (:meth:`FedCDClient.fit`).
SUMS = "sums"
#: Proximity with secure aggregation: the client weighs its last beliefs by its own
#: proximity to the reference graph (:data:`REFERENCE`, ``i -> j`` adjacency).
WEIGH = "fedcd.weigh"
REFERENCE = "reference"
#: The variables' names, asked once when the FIT replies come only as sums.
NAMES = "fedcd.names"
#: The bins' first step: each site's count, sum and centred sum of squares per column.
BIN_SUMMARY = "fedcd.bin-summary"
#: The bins' second step: the shared grids down (:data:`BIN_GRID`), the site's
#: counts per grid cell up.
BIN_COUNTS = "fedcd.bin-counts"
#: The array of a :data:`BIN_COUNTS` message holding the grids (``columns x cells+1``).
BIN_GRID = "bin_grid"
#: The array of a FIT message holding the cut points (``columns x cuts``, NaN-padded).
BIN_CUTS = "bin_cuts"


class FedCDClient(Client):
    """Holds one client's observational and interventional rows; never sends them.

    Each ``fedcd.fit`` message carries the aggregated ``(γ, θ)``; the client runs
    ``epochs_per_round`` ENCO epochs from it (Algorithm 2, local learning stage) and
    replies with its new ``(γ, θ)``, its intervention targets (what proximity
    aggregation needs, §5.2), its variable names and its row count (for voting).

    With continuous columns (``binning``; ENCO models categorical variables), the
    client first answers the bins' exchange (:mod:`fedstruct.fl.binning`):
    :data:`BIN_SUMMARY` with its columns' counts, sums and centred sums of squares,
    :data:`BIN_COUNTS` with its counts over the shared grids; every FIT message then
    carries the cut points (:data:`BIN_CUTS`), with which the client codes its own
    rows (once: the cuts do not change during a run).

    Parameters
    ----------
    data
        The client's rows with their regimes (continuous columns as numbers).
    config
        FED-CD's settings.
    seed
        The run's seed.
    binning
        The continuous columns and how they are binned; ``None``: every column is
        categorical or ordinal already.
    progress
        Show each fit's ENCO steps on stderr, with the time left
        (:class:`~fedstruct.methods.fedcd.progress.EncoPace`); a positive number: the
        fits the run makes in this process (rounds times its sites), for the run's
        time at this pace. ``0`` (default): silent.
    """

    def __init__(
        self,
        data: ClientData,
        *,
        config: FedCDConfig,
        seed: int,
        binning: QuantileBinning | None = None,
        progress: int = 0,
    ) -> None:
        super().__init__(data, seed=seed)
        self.config = config
        self.progress = progress
        self.learner = ENCO(config.enco())
        self.binning = binning if binning is not None and binning.columns else None
        self._cuts: bytes | None = None
        self._local: InterventionalData | None = None
        self._last: Beliefs | None = None  # the last fit's beliefs (a WEIGH request)
        if self.binning is None:
            self._local = InterventionalData.from_client(data)

    @property
    def local(self) -> InterventionalData:
        """The client's rows split by regime, as ENCO reads them (binned columns coded
        once the cut points have come).

        Raises
        ------
        ProtocolError
            Before the cut points of a table with continuous columns have come.
        """
        if self._local is None:
            raise ProtocolError(
                f"client {self.name!r} has continuous columns and no bin cut points yet: "
                "the server sends them with every fedcd.fit message"
            )
        return self._local

    def _code(self, msg: Message) -> None:
        """Code the rows with the message's cut points, if they are new."""
        if self.binning is None or BIN_CUTS not in msg.arrays:
            return
        cuts = np.ascontiguousarray(msg.arrays[BIN_CUTS], dtype=np.float64)
        if self._local is not None and self._cuts == cuts.tobytes():
            return
        bins = QuantileBins.from_array(self.binning.columns, cuts)
        coded = ClientData(self.data.name, bins.encode(self.data.rows),
                           intervention=self.data.intervention)  # fmt: skip
        self._local = InterventionalData.from_client(coded)
        self._cuts = cuts.tobytes()

    def _binning(self) -> QuantileBinning:
        """The client's binning.

        Raises
        ------
        ProtocolError
            For a bins step sent to a client without continuous columns.
        """
        if self.binning is None:
            raise ProtocolError(
                f"client {self.name!r} has no continuous columns, but was asked for a bins step"
            )
        return self.binning

    @handles(BIN_SUMMARY, max_entries=lambda c, m: c._binning().summary_entries, summable=True)
    def bin_summary(self, msg: Message) -> Message:
        """The bins' first step: the columns' counts, sums and centred sums of squares
        (about the request's ``center`` when it has one)."""
        summary = self._binning().summary(self.data.rows, msg.arrays.get(CENTER))
        return Message(BIN_SUMMARY, arrays=summary)

    @handles(BIN_COUNTS, max_entries=lambda c, m: c._binning().histogram_entries, summable=True)
    def bin_counts(self, msg: Message) -> Message:
        """The bins' second step: the client's counts over the shared grids."""
        if BIN_GRID not in msg.arrays:
            raise ProtocolError(f"client {self.name!r} was asked for bin counts without a grid")
        counts = self._binning().histograms(self.data.rows, msg.arrays[BIN_GRID])
        return Message(BIN_COUNTS, arrays={"counts": counts})

    @handles(
        FIT,
        max_entries=lambda c, m: 3 * len(c.data.variables) ** 2 + 2 * len(c.data.variables) + 8,
        graph_arrays=("graph",),
        summable=True,
    )
    def fit(self, msg: Message) -> Message:
        """Local ENCO epochs from the broadcast belief (uniform when none is sent)."""
        self._code(msg)
        local = self.local
        d = len(local.names)
        if "gamma" in msg.arrays:
            prior = Beliefs(msg.arrays["gamma"], msg.arrays["theta"])
        else:
            prior = Beliefs.uniform(d)
        seed = int(self.rng(msg).integers(2**62))
        beliefs = self._learn(local, prior, seed, msg.config.get("round"))
        if msg.config.get(SUMS):
            return self._summable(beliefs)
        return Message(
            FIT,
            arrays={
                "gamma": beliefs.gamma,
                "theta": beliefs.theta,
                "targets": np.asarray(local.targets, dtype=np.int64),
            },
            config={"names": list(local.names)},
            metrics={
                "n": local.n_rows,
                "loss": self.learner.last_loss_,
            },
        )

    def _learn(self, local: InterventionalData, prior: Beliefs, seed: int, rnd: object) -> Beliefs:
        """ENCO's epochs of this round, showing its steps when asked (``progress``)."""
        epochs = self.config.epochs_per_round
        if not self.progress:
            return self.learner.fit(local, prior, epochs, seed)
        enco = self.config.enco()
        total = epochs * (enco.model_steps + enco.graph_steps)
        label = f"{self.name}: ENCO" + (f", round {rnd}" if isinstance(rnd, int) else "")
        with show_progress(label, total, unit="steps", every=EVERY) as bar:
            pace = EncoPace(bar, enco, epochs, (MODEL_STAGE, GRAPH_STAGE), self.progress)
            return self.learner.fit(local, prior, epochs, seed, tick=pace.tick)

    def _summable(self, beliefs: Beliefs) -> Message:
        """The FIT reply of a secure sum: ``n σ(γ)``, ``n σ(θ)`` (the vote's summands,
        §5.1; or ``n γ``, ``n θ`` in logit space), the endpoint marks of the client's
        own graph (for the edge entropy: :func:`~fedstruct.fl.secagg.planes.directed_counts`), ``n``
        and the loss. The beliefs stay here for a proximity :data:`WEIGH` request."""
        self._last = beliefs
        n = self.local.n_rows
        gamma, theta = averaged_values(beliefs, self.config.belief_space)
        graph = final_graph(self.local.names, beliefs, self.config.acyclic)
        return Message(
            FIT,
            arrays={"gamma": n * gamma, "theta": n * theta, "graph": graph.marks.astype(np.int64)},
            metrics={"n": n, "loss": self.learner.last_loss_},
        )

    @handles(WEIGH, max_entries=lambda c, m: 5 * len(c.data.variables) ** 2, summable=True)
    def weigh(self, msg: Message) -> Message:
        """Proximity with secure aggregation (§5.2): the last beliefs' averaged values
        times this client's factor of eq. (1) for the reference graph
        (:func:`~.aggregate.proximity_factor`, from its own targets), and the factor;
        with ``weighting="normalize"`` also the values unweighted (for the pairs no
        client's reliability reaches, averaged with equal weights).

        Raises
        ------
        ProtocolError
            Without a FIT of the same round before it, or without a reference graph.
        """
        beliefs = self._last
        if beliefs is None or REFERENCE not in msg.arrays:
            raise ProtocolError(
                f"client {self.name!r} was asked to weigh its beliefs without a fit before "
                "or without the reference graph"
            )
        c = self.config
        reference = np.asarray(msg.arrays[REFERENCE], dtype=bool)
        factor = proximity_factor(reference, self.local.targets, c.mass, c.discount,
                                  c.min_mass, c.temperature, c.weighting, c.distance)  # fmt: skip
        gamma, theta = averaged_values(beliefs, c.belief_space)
        arrays = {"gamma": factor * gamma, "theta": factor * theta, "factor": factor}
        if c.weighting == "normalize":
            arrays.update({"plain_gamma": gamma, "plain_theta": theta})
        return Message(WEIGH, arrays=arrays)

    def get_state(self) -> dict[str, np.ndarray]:
        """The last fit's beliefs while a proximity round of a secure run needs them
        (:data:`WEIGH`; a deployed node answers each message in a fresh process),
        nothing otherwise."""
        if self._last is None:
            return {}
        return {"gamma": self._last.gamma, "theta": self._last.theta}

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        """Restore :meth:`get_state`."""
        self._last = Beliefs(state["gamma"], state["theta"]) if "gamma" in state else None

    @handles(NAMES, max_entries=lambda c, m: config_entries(list(c.data.variables)))
    def names(self, msg: Message) -> Message:
        """The variables' names (schema, not data), in the order of the beliefs."""
        return Message(NAMES, config={"names": list(self.data.variables)})
