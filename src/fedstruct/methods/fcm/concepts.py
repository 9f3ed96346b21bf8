"""F-CMs' concept data sets built from Bayesian networks (App. B.1).

Rows are sampled from a bnlearn network; one variable is the task ``Y``, every other
one a concept. The inputs ``x`` are not the labels themselves: the one-hot concepts go
through a small autoencoder, the latent codes are mixed with Gaussian noise and
standardised, so a model has to *recover* the concepts
(:func:`make_concept_dataset`). :mod:`fedstruct.methods.fcm.sources` splits a
data set over clients (App. D.1).

All randomness comes from the ``seed`` arguments (``numpy`` generators and a forked
``torch`` generator); no global random state is read or changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.data._shared import make_rng
from fedstruct.data.checks import fraction, integer_at_least
from fedstruct.data.networks import load_network
from fedstruct.errors import ConfigError, DataError, UnknownVariableError
from fedstruct.graphs.graph import Graph

__all__ = [
    "AUTOENCODER_INPUTS",
    "AUTOENCODER_LAYOUTS",
    "AUTOENCODER_ROWS",
    "PARTS",
    "SIZES",
    "TASKS",
    "ConceptDataset",
    "autoencoder_inputs",
    "make_concept_dataset",
    "part_mask",
    "split_counts",
]

#: Task variable of each network in the paper's experiments (App. B.1).
TASKS: dict[str, str] = {
    "asia": "dysp",
    "sachs": "Akt",
    "alarm": "BP",
    "insurance": "PropCost",
    "hailfinder": "R5Fcst",
}

#: (samples, latent dimension) per network (App. B.1).
SIZES: dict[str, tuple[int, int]] = {
    "asia": (15000, 32),
    "sachs": (15000, 32),
    "alarm": (10000, 64),
    "insurance": (20000, 64),
    "hailfinder": (20000, 64),
}

#: Names of the three parts of a data set, with their codes in ``ConceptDataset.split``.
PARTS: tuple[str, ...] = ("train", "validation", "test")

#: Shares of the parts, App. B.1 ("a standard 70%–10%–20% split").
SPLIT_SHARES: tuple[float, float, float] = (0.7, 0.1, 0.2)

#: Smallest data set: every part of the 70/10/20 split gets at least one row.
MIN_SAMPLES = 10

#: Defaults for networks outside :data:`SIZES`: samples, and the latent size for
#: networks of at most / more than ``_SMALL_NETWORK`` nodes (App. B.1 scales it with size).
_DEFAULT_SAMPLES = 15000
_SMALL_NETWORK = 20

#: What the autoencoder reads per concept (:func:`make_concept_dataset`): its state code
#: as one number (the reference code) or its one-hot block.
AUTOENCODER_INPUTS: tuple[str, ...] = ("codes", "onehot")

#: Layers of the autoencoder: ``reference`` (ReLU hidden layers, the code through
#: LeakyReLU(0.1), as the reference code) or ``linear_code`` (LeakyReLU hidden layers,
#: a linear code).
AUTOENCODER_LAYOUTS: tuple[str, ...] = ("reference", "linear_code")

#: Rows the autoencoder is fitted on: every row (the reference code) or the train part.
AUTOENCODER_ROWS: tuple[str, ...] = ("all", "train")

#: Hidden width of the ``linear_code`` autoencoder when none is given (before issue 54).
_LINEAR_CODE_HIDDEN = 128

# Seed tags of the independent random streams, so that changing one option does not
# reshuffle the others.
_TAG_SPLIT, _TAG_TORCH, _TAG_NOISE = 1, 2, 3


# --------------------------------------------------------------- the data set
@dataclass(frozen=True, eq=False)
class ConceptDataset:
    """A concept data set built from a Bayesian network (F-CMs, App. B.1).

    Attributes
    ----------
    network
        The network's name.
    task
        The task variable ``Y``; every other variable is a concept.
    graph
        The true DAG over all variables (concepts and task).
    cardinalities
        Number of states of each variable.
    x
        ``(n, latent)`` ``float32`` inputs, standardised with the train rows' statistics.
    labels
        ``(n, V)`` ``int64`` state codes, columns in ``graph.names`` order.
    split
        ``int8`` per row: 0 train, 1 validation, 2 test (see :func:`split_counts`).
    """

    network: str
    task: str
    graph: Graph
    cardinalities: dict[str, int]
    x: NDArray[np.float32]
    labels: pd.DataFrame
    split: NDArray[np.int8]

    @property
    def features(self) -> tuple[str, ...]:
        """Names of the input columns: ``"x0", "x1", ...``, one per latent dimension."""
        return tuple(f"x{j}" for j in range(self.x.shape[1]))

    @property
    def concepts(self) -> tuple[str, ...]:
        """Every variable except the task, in graph order."""
        return tuple(v for v in self.graph.names if v != self.task)

    def frame(self, part: str | Sequence[str] = PARTS) -> pd.DataFrame:
        """Feature columns then label columns, for the rows of the given parts.

        Parameters
        ----------
        part
            ``"train"``, ``"validation"``, ``"test"`` or a sequence of them.

        Returns
        -------
        pandas.DataFrame
            Rows in data set order, indexed by their row number in the data set;
            features ``float32``, labels ``int64``.

        Raises
        ------
        ConfigError
            If a part is not one of :data:`PARTS`.
        """
        mask = part_mask(self.split, part)
        idx = np.flatnonzero(mask)
        feats = pd.DataFrame(self.x[idx], columns=list(self.features), index=idx)
        labels = self.labels.iloc[idx].set_axis(idx, axis=0)
        return pd.concat([feats, labels], axis=1)


def part_mask(split: NDArray[np.int8], part: str | Sequence[str]) -> NDArray[np.bool_]:
    parts = [part] if isinstance(part, str) else list(part)
    bad = [p for p in parts if p not in PARTS]
    if bad or not parts:
        raise ConfigError(
            f"unknown data set part(s) {bad or parts!r}; choose among {', '.join(PARTS)}"
        )
    return np.isin(split, [PARTS.index(p) for p in parts])


def split_counts(n: int) -> tuple[int, int, int]:
    """Row counts of the train / validation / test parts of ``n`` rows (App. B.1, 70/10/20).

    Each share times ``n`` is rounded down and the rows left over go to the parts with
    the largest remainders, earlier parts first on ties (Hamilton's method), so the
    counts are exact whenever ``n`` is a multiple of 10 (e.g. 3000 -> 2100/300/600).
    """
    exact = np.array(SPLIT_SHARES) * n
    base = np.floor(exact + 1e-9).astype(int)
    order = np.argsort(-(exact - base), kind="stable")
    base[order[: n - int(base.sum())]] += 1
    return int(base[0]), int(base[1]), int(base[2])


def autoencoder_inputs(
    labels: pd.DataFrame,
    cardinalities: Mapping[str, int],
    task: str,
    *,
    encoding: str = "onehot",
    with_task: bool = False,
) -> NDArray[np.float32]:
    """What the autoencoder of App. B.1 reads: every concept column, never the task
    unless ``with_task``.

    Parameters
    ----------
    labels
        State codes, one column per variable.
    cardinalities
        Number of states of each variable.
    task
        The task column, left out (so that it cannot leak into the inputs) unless
        ``with_task``, which puts it last.
    encoding
        ``"onehot"``: each variable's block is the one-hot vector of its state;
        ``"codes"``: each variable is one column holding its state code (the reference
        code's "flattened" concept values).
    with_task
        Also encode the task (what one version of the reference code does).

    Returns
    -------
    ndarray
        ``(n, width)`` ``float32``, one block per variable in column order (the task
        last with ``with_task``); ``width`` is the sum of their cardinalities
        (one-hot) or their number (codes).
    """
    cols = [c for c in labels.columns if c != task] + ([task] if with_task else [])
    blocks = []
    for col in cols:
        codes = labels[col].to_numpy()
        if encoding == "codes":
            blocks.append(codes.astype(np.float32)[:, None])
        else:
            blocks.append(np.eye(int(cardinalities[col]), dtype=np.float32)[codes])
    if not blocks:
        return np.zeros((len(labels), 0), dtype=np.float32)
    return np.concatenate(blocks, axis=1)


def make_concept_dataset(
    network: str,
    task: str | None = None,
    *,
    n_samples: int | None = None,
    latent_dim: int | None = None,
    noise: float = 0.5,
    standardise_latent: bool = False,
    seed: int = 0,
    autoencoder_epochs: int = 30,
    autoencoder_patience: int = 50,
    autoencoder_hidden: int = 0,
    autoencoder_input: str = "onehot",
    autoencoder_layout: str = "linear_code",
    autoencoder_rows: str = "train",
    autoencoder_task: bool = False,
    batch_size: int = 512,
    learning_rate: float = 1e-3,
) -> ConceptDataset:
    """Sample a Bayesian network and build the concept data set of F-CMs App. B.1.

    Steps (App. B.1; where it is silent, the reference code francescoTheSantis/F-CMs,
    ``src/data/autoencoder.py`` and ``preprocessing.py``; docs/fcm.md, choice 11):

    1. Sample ``n_samples`` rows from the network (forward sampling, ``seed``).
    2. Split the rows at random into train / validation / test, 70/10/20 by count
       (:func:`split_counts`).
    3. Train an autoencoder with an MSE loss on the concepts of ``autoencoder_rows``
       (default every row, as the reference code; the task is never an input, so it
       cannot leak): "concept values are flattened", each concept one column holding
       its state code (``autoencoder_input = "codes"``, the reference code; ``onehot``:
       its one-hot block, :func:`autoencoder_inputs`). "Two encoder and two decoder
       layers": with ``autoencoder_layout = "reference"`` the encoder is ``Linear(d, h)
       → ReLU → Linear(h, latent) → LeakyReLU(0.1)`` and the decoder ``Linear(latent,
       h) → ReLU → Linear(h, d)``, ``h`` = ``latent`` (``autoencoder_hidden = 0``);
       ``linear_code`` uses LeakyReLU hidden layers (``h`` = 128) and no activation
       on the code.
       Adam, mini-batches of ``batch_size`` in row order (reshuffled every epoch with
       ``autoencoder_rows = "train"``), at most ``autoencoder_epochs`` epochs, stopped
       when the epoch's summed loss has not fallen for ``autoencoder_patience`` epochs
       (the last weights are kept, which is what the reference code's early stopping
       does).
    4. Encode every row to ``z`` and mix "50% of the encoded signal with 50% Gaussian
       noise": ``x = (1 - noise) * z + noise * e`` with ``e ~ N(0, I)``; ``noise`` is the
       mixing weight (0.5 in the paper).
    5. Standardise each column of ``x`` with the train rows' mean and standard
       deviation (a constant column is only centred).

    Parameters
    ----------
    network
        A network name (see :func:`fedstruct.data.networks.network_names`).
    task
        The task variable; default :data:`TASKS` ``[network]``.
    n_samples, latent_dim
        Default :data:`SIZES` ``[network]``; for other networks 15000 samples and a
        latent size of 32 (at most 20 nodes) or 64.
    noise
        Weight of the Gaussian noise in the inputs, in ``[0, 1]``.
    standardise_latent
        Standardise the latent codes (train statistics) before mixing, so that "50%
        signal, 50% noise" mixes two unit-variance signals. App. B.1 and the reference
        code do not: by default the codes are mixed at the scale the autoencoder gave
        them (docs/fcm.md).
    seed
        Seed of the sample, the split, the autoencoder and the noise.
    autoencoder_epochs, autoencoder_patience
        Most epochs of the autoencoder, and epochs without a lower loss before it stops
        (reference code: 2000 and 50).
    autoencoder_hidden
        Width of the autoencoder's hidden layers; 0: the latent size with the
        ``reference`` layout (as the reference code), 128 with ``linear_code``.
    autoencoder_input, autoencoder_layout, autoencoder_rows
        One of :data:`AUTOENCODER_INPUTS`, :data:`AUTOENCODER_LAYOUTS`,
        :data:`AUTOENCODER_ROWS` (step 3).
    autoencoder_task
        Also feed the task to the autoencoder, so that the inputs carry it (one version
        of the reference code's ``preprocessing.py`` does; App. B.1 says the concepts):
        a diagnostic, off by default.
    batch_size, learning_rate
        Mini-batch size and Adam learning rate of the autoencoder (reference: 512, 5e-4).

    Raises
    ------
    UnknownNetworkError
        If the network is not shipped (the message lists the valid names).
    UnknownVariableError
        If ``task`` is not a variable of the network.
    ConfigError
        If ``noise`` is outside ``[0, 1]``, ``n_samples`` is below 10 (every part of
        the split needs a row), a size or epoch count is not a positive integer, an
        ``autoencoder_*`` choice is not one of its values, or no task is given for a
        network without a default one.
    """
    net = load_network(network)
    name = net.name
    graph = net.graph
    if task is None:
        if name not in TASKS:
            raise ConfigError(
                f"network {name!r} has no default task; pass task= one of its variables"
            )
        task = TASKS[name]
    if task not in graph:
        raise UnknownVariableError(
            f"task {task!r} is not a variable of network {name!r}; "
            f"valid variables: {', '.join(graph.names)}"
        )
    default_n, default_latent = SIZES.get(
        name, (_DEFAULT_SAMPLES, 32 if graph.n_nodes <= _SMALL_NETWORK else 64)
    )
    n = default_n if n_samples is None else n_samples
    n = integer_at_least(n, "n_samples", MIN_SAMPLES)
    latent = integer_at_least(default_latent if latent_dim is None else latent_dim, "latent_dim")
    epochs = integer_at_least(autoencoder_epochs, "autoencoder_epochs")
    patience = integer_at_least(autoencoder_patience, "autoencoder_patience")
    hidden = integer_at_least(autoencoder_hidden, "autoencoder_hidden", 0) or (
        latent if autoencoder_layout == "reference" else _LINEAR_CODE_HIDDEN
    )
    for value, field, choices in (
        (autoencoder_input, "autoencoder_input", AUTOENCODER_INPUTS),
        (autoencoder_layout, "autoencoder_layout", AUTOENCODER_LAYOUTS),
        (autoencoder_rows, "autoencoder_rows", AUTOENCODER_ROWS),
    ):
        if value not in choices:
            raise ConfigError(f"{field} must be one of {', '.join(choices)}; got {value!r}")
    batch = integer_at_least(batch_size, "batch_size")
    noise = fraction(noise, "noise")
    if isinstance(learning_rate, bool) or not (
        isinstance(learning_rate, int | float) and learning_rate > 0
    ):
        raise ConfigError(f"learning_rate must be a positive number, got {learning_rate!r}")
    clash = [v for v in graph.names if v.startswith("x") and v[1:].isdigit()]
    if clash:
        raise DataError(
            f"network {name!r} has variables {clash} named like input features x0, x1, ..."
        )
    make_rng(seed)  # validates the seed with a clear message

    labels = net.sample(n, seed=seed).astype(np.int64)
    labels = labels.loc[:, list(graph.names)]
    cards = {v: int(net.cardinalities[v]) for v in graph.names}

    counts = split_counts(n)
    perm = make_rng([seed, _TAG_SPLIT]).permutation(n)
    split = np.empty(n, dtype=np.int8)
    split[perm[: counts[0]]] = 0
    split[perm[counts[0] : counts[0] + counts[1]]] = 1
    split[perm[counts[0] + counts[1] :]] = 2

    inputs = autoencoder_inputs(
        labels, cards, task, encoding=autoencoder_input, with_task=autoencoder_task
    )
    fit_rows = split == 0 if autoencoder_rows == "train" else np.ones(n, dtype=bool)
    torch_seed = int(make_rng([seed, _TAG_TORCH]).integers(2**62))
    z = _encode(
        inputs,
        fit_rows,
        _Training(
            latent=latent,
            hidden=hidden,
            layout=autoencoder_layout,
            epochs=epochs,
            patience=patience,
            batch=batch,
            lr=float(learning_rate),
            shuffle=autoencoder_rows == "train",
            seed=torch_seed,
        ),
    )
    e = make_rng([seed, _TAG_NOISE]).standard_normal(z.shape)
    if standardise_latent:
        ref = z[split == 0]
        z = (z - ref.mean(axis=0)) / np.where(ref.std(axis=0) > 0, ref.std(axis=0), 1.0)
    x = (1.0 - noise) * z + noise * e
    train = x[split == 0]
    mean = train.mean(axis=0)
    std = train.std(axis=0)
    std[std == 0] = 1.0
    x = ((x - mean) / std).astype(np.float32)
    x.setflags(write=False)
    split.setflags(write=False)
    return ConceptDataset(
        network=name,
        task=task,
        graph=graph,
        cardinalities=cards,
        x=x,
        labels=labels.reset_index(drop=True),
        split=split,
    )


@dataclass(frozen=True)
class _Training:
    """How the autoencoder of :func:`make_concept_dataset` (step 3) is built and fitted."""

    latent: int
    hidden: int
    layout: str
    epochs: int
    patience: int
    batch: int
    lr: float
    shuffle: bool
    seed: int


def _encode(
    inputs: NDArray[np.float32], fit: NDArray[np.bool_], how: _Training
) -> NDArray[np.float64]:
    """Fit the App. B.1 autoencoder on the ``fit`` rows; return every row's latent code.

    Runs inside ``torch.random.fork_rng`` seeded with ``how.seed``, so the global torch
    random state is neither read nor changed. It uses one torch thread (restored on
    exit): the model is tiny, and several intra-op threads on a busy machine are tens
    of times slower; one thread also makes the result independent of the core count.
    """
    import torch  # imported here so that ``import fedstruct.data`` stays light
    from torch import nn

    d, h, k = inputs.shape[1], how.hidden, how.latent
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(how.seed)
            if how.layout == "reference":
                encoder = nn.Sequential(
                    nn.Linear(d, h), nn.ReLU(), nn.Linear(h, k), nn.LeakyReLU(0.1)
                )
                decoder = nn.Sequential(nn.Linear(k, h), nn.ReLU(), nn.Linear(h, d))
            else:
                encoder = nn.Sequential(nn.Linear(d, h), nn.LeakyReLU(), nn.Linear(h, k))
                decoder = nn.Sequential(nn.Linear(k, h), nn.LeakyReLU(), nn.Linear(h, d))
            params = [*encoder.parameters(), *decoder.parameters()]
            optimiser = torch.optim.Adam(params, lr=how.lr)
            data = torch.from_numpy(np.ascontiguousarray(inputs))
            fit_data = data[torch.from_numpy(fit)]
            m = fit_data.shape[0]
            best, stale = float("inf"), 0
            for _ in range(how.epochs):
                order = torch.randperm(m) if how.shuffle else torch.arange(m)
                total = 0.0
                for start in range(0, m, how.batch):
                    xb = fit_data[order[start : start + how.batch]]
                    loss = torch.mean((decoder(encoder(xb)) - xb) ** 2)
                    optimiser.zero_grad()
                    loss.backward()
                    optimiser.step()
                    total += loss.item()
                best, stale = (total, 0) if total < best else (best, stale + 1)
                if stale >= how.patience:
                    break
            with torch.no_grad():
                return encoder(data).numpy().astype(np.float64)
    finally:
        torch.set_num_threads(threads)
