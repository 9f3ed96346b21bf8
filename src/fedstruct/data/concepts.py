"""Concept data sets from Bayesian networks and their federated client partition (F-CMs).

Two steps, following the F-CMs paper (papers/fcm-federated-concept-based-models.txt):

1. :func:`make_concept_dataset` — App. B.1 ("Bayesian Network Datasets"). Rows are
   sampled from a bnlearn network; one variable is the task ``Y``, every other one a
   concept. The inputs ``x`` are not the labels themselves: the one-hot concepts go
   through a small autoencoder, the latent codes are mixed with Gaussian noise and
   standardised, so a model has to *recover* the concepts.
2. :func:`concept_clients` — App. D.1 ("Client local data") and §5 / App. D.3
   ("Federated protocol"): each client supervises the nodes of a random ancestral
   sub-graph of the true DAG around the task, some clients miss the task labels,
   some clients' graphs are perturbed (App. E.6), and rows are split disjointly.

Cohorts (our design choice; D.3 says only that "the client pool ... reach[es] a total
of 20 clients" and that late clients "introduce additional concept supervision"). The
first ``n_initial`` clients form the *initial* cohort (cohort 0), the others the *late*
cohort (cohort 1) that joins the federation later. A random subset of the concepts,
the *new concepts*, is never supervised by the initial cohort: its ancestor walks only
step to parents that are not new (a node whose parents are all new acts as a root for
it). The late cohort walks the full graph, and the coverage of the new concepts is
enforced within it, so late clients bring new concepts and new edges. Rows of both
cohorts come from the same distribution (the shift is in supervision, not in ``x``).

All randomness comes from the ``seed`` arguments (``numpy`` generators and a forked
``torch`` generator); no global random state is read or changed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.data.checks import fraction, integer_at_least
from fedstruct.data.client import ClientData
from fedstruct.data.discrete import make_rng
from fedstruct.data.networks import load_network
from fedstruct.data.partition import balanced_sizes
from fedstruct.errors import ConfigError, DataError, UnknownVariableError
from fedstruct.graphs.graph import Graph, reachable

__all__ = [
    "PARTS",
    "SIZES",
    "TASKS",
    "ConceptDataset",
    "ConceptPartition",
    "autoencoder_inputs",
    "concept_clients",
    "make_concept_dataset",
    "perturb_dag",
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

# Seed tags of the independent random streams, so that changing one option does not
# reshuffle the others.
_TAG_SPLIT, _TAG_TORCH, _TAG_NOISE = 1, 2, 3
_TAG_NEW, _TAG_GRAPHS, _TAG_TASK, _TAG_COVER, _TAG_PERTURB, _TAG_ROWS = 11, 12, 13, 14, 15, 16

#: Tries of the rejection sampler of the new concepts before its fallback.
_NEW_CONCEPT_TRIES = 100
#: Tries per edge modification before falling back to a removal.
_PERTURB_TRIES = 50


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
        mask = _part_mask(self.split, part)
        idx = np.flatnonzero(mask)
        feats = pd.DataFrame(self.x[idx], columns=list(self.features), index=idx)
        labels = self.labels.iloc[idx].set_axis(idx, axis=0)
        return pd.concat([feats, labels], axis=1)


def _part_mask(split: NDArray[np.int8], part: str | Sequence[str]) -> NDArray[np.bool_]:
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
    labels: pd.DataFrame, cardinalities: Mapping[str, int], task: str
) -> NDArray[np.float32]:
    """One-hot encoding of every concept column — never the task (App. B.1).

    Parameters
    ----------
    labels
        State codes, one column per variable.
    cardinalities
        Number of states of each variable.
    task
        The task column, left out so that it cannot leak into the inputs.

    Returns
    -------
    ndarray
        ``(n, sum of concept cardinalities)`` ``float32``, concept blocks in column
        order, each block the one-hot vector of that concept's state.
    """
    blocks = []
    for col in labels.columns:
        if col == task:
            continue
        k = int(cardinalities[col])
        blocks.append(np.eye(k, dtype=np.float32)[labels[col].to_numpy()])
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
    autoencoder_hidden: int = 128,
    batch_size: int = 512,
    learning_rate: float = 1e-3,
) -> ConceptDataset:
    """Sample a Bayesian network and build the concept data set of F-CMs App. B.1.

    Steps (App. B.1):

    1. Sample ``n_samples`` rows from the network (forward sampling, ``seed``).
    2. Split the rows at random into train / validation / test, 70/10/20 by count
       (:func:`split_counts`).
    3. Train an autoencoder with an MSE loss on the one-hot concepts of the train rows
       only (:func:`autoencoder_inputs`: the task is never an input, so it cannot leak).
       "Two encoder and two decoder layers": encoder ``Linear(d, hidden) → LeakyReLU →
       Linear(hidden, latent)``, decoder ``Linear(latent, hidden) → LeakyReLU →
       Linear(hidden, d)`` (LeakyReLU as everywhere in D.3); Adam, mini-batches of
       ``batch_size`` reshuffled every epoch.
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
        signal, 50% noise" mixes two unit-variance signals. App. B.1 does not say; by
        default the raw codes are mixed (their scale is whatever the autoencoder
        learned, about 0.3 on asia, which makes the concepts much harder to recover:
        docs/fcm.md).
    seed
        Seed of the sample, the split, the autoencoder and the noise.
    autoencoder_epochs, autoencoder_hidden, batch_size, learning_rate
        Autoencoder training: epochs over the train rows, hidden width, mini-batch
        size and Adam learning rate.

    Raises
    ------
    UnknownNetworkError
        If the network is not shipped (the message lists the valid names).
    UnknownVariableError
        If ``task`` is not a variable of the network.
    ConfigError
        If ``noise`` is outside ``[0, 1]``, ``n_samples`` is below 10 (every part of
        the split needs a row), a size or epoch count is not a positive integer, or no
        task is given for a network without a default one.
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
    hidden = integer_at_least(autoencoder_hidden, "autoencoder_hidden")
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

    inputs = autoencoder_inputs(labels, cards, task)
    torch_seed = int(make_rng([seed, _TAG_TORCH]).integers(2**62))
    z = _encode(inputs, split == 0, latent, hidden, epochs, batch, float(learning_rate), torch_seed)
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


def _encode(
    inputs: NDArray[np.float32],
    train: NDArray[np.bool_],
    latent: int,
    hidden: int,
    epochs: int,
    batch: int,
    lr: float,
    seed: int,
) -> NDArray[np.float64]:
    """Fit the App. B.1 autoencoder on the ``train`` rows; return every row's latent code.

    Runs inside ``torch.random.fork_rng`` seeded with ``seed``, so the global torch
    random state is neither read nor changed. It uses one torch thread (restored on
    exit): the model is tiny, and several intra-op threads on a busy machine are tens
    of times slower; one thread also makes the result independent of the core count.
    """
    import torch  # imported here so that ``import fedstruct.data`` stays light
    from torch import nn

    d = inputs.shape[1]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            encoder = nn.Sequential(nn.Linear(d, hidden), nn.LeakyReLU(), nn.Linear(hidden, latent))
            decoder = nn.Sequential(nn.Linear(latent, hidden), nn.LeakyReLU(), nn.Linear(hidden, d))
            params = [*encoder.parameters(), *decoder.parameters()]
            optimiser = torch.optim.Adam(params, lr=lr)
            data = torch.from_numpy(np.ascontiguousarray(inputs))
            train_data = data[torch.from_numpy(train)]
            m = train_data.shape[0]
            for _ in range(epochs):
                order = torch.randperm(m)
                for start in range(0, m, batch):
                    xb = train_data[order[start : start + batch]]
                    loss = torch.mean((decoder(encoder(xb)) - xb) ** 2)
                    optimiser.zero_grad()
                    loss.backward()
                    optimiser.step()
            with torch.no_grad():
                return encoder(data).numpy().astype(np.float64)
    finally:
        torch.set_num_threads(threads)


# ------------------------------------------------------------ the partition
@dataclass(frozen=True, eq=False)
class ConceptPartition:
    """Clients of an F-CMs federation over a :class:`ConceptDataset` (App. D.1, D.3).

    Attributes
    ----------
    clients
        The initial cohort first, then the late cohort.
    cohort
        Client name -> 0 (initial cohort) or 1 (joins later).
    new_concepts
        Variables only the late cohort supervises, in graph order.
    true_graphs
        Client name -> its induced true sub-graph, before any perturbation.
    test
        The data set's test rows: features and every label (fully labelled).
    """

    clients: list[ClientData]
    cohort: dict[str, int]
    new_concepts: tuple[str, ...]
    true_graphs: dict[str, Graph]
    test: pd.DataFrame

    @property
    def initial(self) -> list[ClientData]:
        """Clients of the initial cohort (cohort 0)."""
        return [c for c in self.clients if self.cohort[c.name] == 0]

    @property
    def late(self) -> list[ClientData]:
        """Clients of the cohort that joins later (cohort 1)."""
        return [c for c in self.clients if self.cohort[c.name] == 1]


def _round_half_up(x: float) -> int:
    return math.floor(x + 0.5 + 1e-9)


def _ancestor_path(
    start: int, parents: list[NDArray[np.intp]], rng: np.random.Generator
) -> list[int]:
    """A random walk from ``start`` up incoming edges to a root (App. D.1).

    ``parents[v]`` are the parents the walk may step to; a node without any is a root.
    """
    path = [start]
    node = start
    while parents[node].size:
        node = int(parents[node][rng.integers(parents[node].size)])
        path.append(node)
    return path


def concept_clients(
    dataset: ConceptDataset,
    n_clients: int = 20,
    n_initial: int = 10,
    *,
    paths_per_client: int = 2,
    extra_concepts: int = 1,
    task_missing: float = 0.2,
    new_concept_fraction: float = 0.3,
    perturbed_clients: float = 0.0,
    perturbed_edges: float = 0.0,
    seed: int = 0,
    client_parts: Sequence[str] = ("train", "validation"),
) -> ConceptPartition:
    """Split a concept data set over F-CMs clients with partial supervision (App. D.1).

    Construction (App. D.1 "Client local data", with the cohorts of the module docstring;
    every ``round`` here rounds halves up, e.g. ``round(0.25 × 10) = 3``):

    1. *New concepts.* ``round(new_concept_fraction × #concepts)`` non-task variables,
       drawn uniformly among subsets that leave the task at least one parent that is not
       new (rejection sampling; after 100 rejections one random task parent is kept old
       and the rest drawn among the other concepts). There are none without a late cohort.
       The walking graph of the initial cohort has only the edges between non-new nodes;
       the late cohort walks the full graph.
    2. *Sub-graphs.* Each client takes ``paths_per_client`` random ancestor paths from
       the task ``Y`` (a leaf) up to a root of its walking graph (each step to a
       uniformly drawn parent), then ``extra_concepts`` distinct random concepts that are
       not roots (nor the task) of its walking graph (all of them if there are fewer),
       with one ancestor path each. Its node set is the union; its graph the true graph
       restricted to it (induced sub-graph).
    3. *Missing task.* In each cohort of size ``m``, ``min(round(task_missing × m), m - 1)``
       clients (rounded half up) drop ``Y``; they are drawn among clients with another
       node (a client whose only node is ``Y`` keeps it), so the count can only fall
       short when too few clients have one. At least one client per cohort keeps ``Y``.
    4. *Coverage.* Every variable must be some client's node: each uncovered variable
       (graph order) is added, with one ancestor path, to a random client allowed to
       hold it — a late client for a new concept, any client otherwise.
    5. *Perturbation* (App. D.1, E.6). ``round(perturbed_clients × n_clients)`` random
       clients get :func:`perturb_dag` with ``round(perturbed_edges × #edges)``
       modifications of their sub-graph (at least one when both shares are positive and
       the sub-graph has an edge).
    6. *Rows.* The rows of ``client_parts`` (train and validation by default; never the
       test rows) are shuffled and cut into ``n_clients`` disjoint parts whose sizes
       differ by at most one (larger parts first). A client's rows are the feature
       columns and one ``int64`` label column per variable it supervises: a client has
       no column at all for a concept it does not annotate (every column that is not
       supervised is an input feature).

    Parameters
    ----------
    dataset
        The data set (:func:`make_concept_dataset`); its task must be a leaf of its graph.
    n_clients
        Size of the final pool (20 in the paper, §5).
    n_initial
        Clients of the initial cohort, ``1..n_clients``; the rest join later.
    paths_per_client
        Ancestor paths from the task per client.
    extra_concepts
        Non-root concepts per client added with one ancestor path each.
    task_missing
        Share of each cohort without task labels.
    new_concept_fraction
        Share of the concepts only the late cohort supervises.
    perturbed_clients, perturbed_edges
        Share of clients with a perturbed graph, and share of their edges modified.
    seed
        Seed of every draw (independent streams per step).
    client_parts
        Parts of the data set whose rows go to the clients.

    Returns
    -------
    ConceptPartition
        Clients ``client-1 .. client-K`` (initial cohort first), with ``supervised`` =
        their node set and ``graph`` = their (possibly perturbed) sub-graph, both in
        graph order.

    Raises
    ------
    ConfigError
        If a count or share is out of range, ``client_parts`` includes ``"test"`` or an
        unknown part, there are fewer rows than clients, or the task is not a leaf.
    """
    n_clients = integer_at_least(n_clients, "n_clients")
    if (
        isinstance(n_initial, bool)
        or not isinstance(n_initial, int | np.integer)
        or not (1 <= n_initial <= n_clients)
    ):
        raise ConfigError(
            f"n_initial must be an integer in 1..n_clients ({n_clients}), got {n_initial!r}"
        )
    n_initial = int(n_initial)
    paths_per_client = integer_at_least(paths_per_client, "paths_per_client")
    extra_concepts = integer_at_least(extra_concepts, "extra_concepts", 0)
    task_missing = fraction(task_missing, "task_missing")
    new_concept_fraction = fraction(new_concept_fraction, "new_concept_fraction")
    perturbed_clients = fraction(perturbed_clients, "perturbed_clients")
    perturbed_edges = fraction(perturbed_edges, "perturbed_edges")
    make_rng(seed)
    parts = [client_parts] if isinstance(client_parts, str) else list(client_parts)
    if "test" in parts:
        raise ConfigError(
            "client_parts must not include 'test': the test rows are kept out of the clients"
        )
    row_mask = _part_mask(dataset.split, parts)

    graph = dataset.graph
    task = dataset.task
    names = graph.names
    children = graph.children(task)
    if children:
        raise ConfigError(
            f"task {task!r} has children {list(children)} in network {dataset.network!r}; "
            "the client sub-graphs (App. D.1) need a leaf task: choose a leaf variable"
        )
    n_rows = int(row_mask.sum())
    if n_rows < n_clients:
        raise ConfigError(
            f"{n_rows} rows cannot give {n_clients} clients one row each; "
            "use fewer clients or a larger data set"
        )

    n_vars = len(names)
    t = graph.index(task)
    adj = graph.directed()
    n_late = n_clients - n_initial
    cohorts = [0] * n_initial + [1] * n_late

    # 1. new concepts and each cohort's walking graph
    new = _draw_new_concepts(
        adj, t, new_concept_fraction if n_late else 0.0, make_rng([seed, _TAG_NEW])
    )
    old = ~new
    walk_adj = [adj & old[:, None] & old[None, :], adj]
    walk_parents = [[np.flatnonzero(a[:, v]) for v in range(n_vars)] for a in walk_adj]
    allowed = [old, np.ones(n_vars, dtype=bool)]

    # 2. sub-graphs
    rng = make_rng([seed, _TAG_GRAPHS])
    nodes = [np.zeros(n_vars, dtype=bool) for _ in range(n_clients)]
    for k, c in enumerate(cohorts):
        par = walk_parents[c]
        for _ in range(paths_per_client):
            nodes[k][_ancestor_path(t, par, rng)] = True
        candidates = np.array(
            [v for v in range(n_vars) if v != t and allowed[c][v] and par[v].size], dtype=np.intp
        )
        n_extra = min(extra_concepts, candidates.size)
        for v in rng.choice(candidates, size=n_extra, replace=False) if n_extra else ():
            nodes[k][_ancestor_path(int(v), par, rng)] = True

    # 3. missing task, per cohort
    rng = make_rng([seed, _TAG_TASK])
    for c in (0, 1):
        members = [k for k in range(n_clients) if cohorts[k] == c]
        if not members:
            continue
        want = min(_round_half_up(task_missing * len(members)), len(members) - 1)
        eligible = np.array([k for k in members if nodes[k].sum() > 1], dtype=np.intp)
        drop = min(want, eligible.size)
        for k in rng.choice(eligible, size=drop, replace=False) if drop else ():
            nodes[int(k)][t] = False

    # 4. coverage
    rng = make_rng([seed, _TAG_COVER])
    for v in range(n_vars):
        if any(nd[v] for nd in nodes):
            continue
        pool = [k for k in range(n_clients) if allowed[cohorts[k]][v]]
        k = pool[int(rng.integers(len(pool)))]
        nodes[k][_ancestor_path(v, walk_parents[cohorts[k]], rng)] = True

    client_names = [f"client-{k + 1}" for k in range(n_clients)]
    true_graphs = {
        client_names[k]: graph.restrict([names[v] for v in np.flatnonzero(nodes[k])])
        for k in range(n_clients)
    }

    # 5. perturbation
    rng = make_rng([seed, _TAG_PERTURB])
    n_perturbed = _round_half_up(perturbed_clients * n_clients)
    perturbed = set(rng.choice(n_clients, size=n_perturbed, replace=False).tolist())
    client_graphs = dict(true_graphs)
    for k in sorted(perturbed):
        g = true_graphs[client_names[k]]
        n_mod = _round_half_up(perturbed_edges * g.n_edges)
        if perturbed_edges > 0 and g.n_edges:
            n_mod = max(n_mod, 1)
        client_graphs[client_names[k]] = perturb_dag(g, n_mod, rng)

    # 6. rows
    pool_idx = np.flatnonzero(row_mask)
    perm = make_rng([seed, _TAG_ROWS]).permutation(pool_idx)
    cuts = np.cumsum(balanced_sizes(n_rows, n_clients))[:-1]
    features = dataset.features
    feats = pd.DataFrame(np.asarray(dataset.x), columns=list(features))
    codes = dataset.labels.to_numpy(dtype=np.int64)
    clients = []
    for k, part in enumerate(np.split(perm, cuts)):
        idx = np.sort(part)
        own = np.flatnonzero(nodes[k])
        rows = pd.concat(
            [
                feats.iloc[idx].set_axis(idx, axis=0),
                pd.DataFrame(codes[np.ix_(idx, own)], columns=[names[v] for v in own], index=idx),
            ],
            axis=1,
        )
        name = client_names[k]
        clients.append(
            ClientData(
                name,
                rows,
                supervised=tuple(names[v] for v in own),
                graph=client_graphs[name],
            )
        )
    return ConceptPartition(
        clients=clients,
        cohort={client_names[k]: cohorts[k] for k in range(n_clients)},
        new_concepts=tuple(names[v] for v in np.flatnonzero(new)),
        true_graphs=true_graphs,
        test=dataset.frame("test"),
    )


def _draw_new_concepts(
    adj: NDArray[np.bool_], task: int, fraction: float, rng: np.random.Generator
) -> NDArray[np.bool_]:
    """The new-concept mask: ``round(fraction × #concepts)`` non-task variables.

    Uniform over the subsets that leave the task at least one parent that is not new
    (rejection sampling); after :data:`_NEW_CONCEPT_TRIES` rejections, one random task
    parent is kept old and the others drawn among the remaining concepts.

    Raises
    ------
    ConfigError
        If the count leaves no task parent outside the new concepts.
    """
    n = adj.shape[0]
    concepts = np.array([v for v in range(n) if v != task], dtype=np.intp)
    m = _round_half_up(fraction * concepts.size)
    task_parents = np.flatnonzero(adj[:, task])
    mask = np.zeros(n, dtype=bool)
    if m == 0:
        return mask
    if task_parents.size and m > concepts.size - 1:
        raise ConfigError(
            f"new_concept_fraction={fraction} makes all {concepts.size} concepts new, leaving "
            "the initial cohort no parent of the task; lower it"
        )
    for _ in range(_NEW_CONCEPT_TRIES):
        chosen = rng.choice(concepts, size=m, replace=False)
        if not task_parents.size or not np.isin(task_parents, chosen).all():
            mask[chosen] = True
            return mask
    keep = int(task_parents[rng.integers(task_parents.size)])
    rest = concepts[concepts != keep]
    mask[rng.choice(rest, size=m, replace=False)] = True
    return mask


def perturb_dag(graph: Graph, n_modifications: int, rng: np.random.Generator) -> Graph:
    """Apply random edge modifications to a DAG, keeping it acyclic (App. D.1, E.6).

    Each modification picks, uniformly, *flip* (reverse an edge), *remove* (delete an
    edge) or *add* (a new edge between two non-adjacent nodes, random direction), on a
    node pair no earlier modification touched. A flip or add that would close a
    directed cycle, or a kind with no eligible pair, is rejected and drawn again; after
    50 rejections the modification is a removal, which is always possible. So the
    result differs from ``graph`` on exactly ``n_modifications`` node pairs.

    Parameters
    ----------
    graph
        A DAG.
    n_modifications
        Number of modifications, at most ``graph.n_edges`` (each flip or removal
        consumes an original edge, and removals must stay possible).
    rng
        The random generator.

    Raises
    ------
    ConfigError
        If ``n_modifications`` is negative or above the number of edges.
    """
    graph.require_dag("graph to perturb")
    if n_modifications < 0 or n_modifications > graph.n_edges:
        raise ConfigError(
            f"cannot make {n_modifications} modifications to a graph with {graph.n_edges} "
            "edges; use between 0 and that number"
        )
    adj = graph.directed().copy()
    n = adj.shape[0]
    touched = np.zeros((n, n), dtype=bool)
    for _ in range(n_modifications):
        for _attempt in range(_PERTURB_TRIES):
            kind = int(rng.integers(3))  # 0 flip, 1 remove, 2 add
            if kind < 2:
                cand = np.argwhere(adj & ~touched)
            else:
                cand = np.argwhere(np.triu(~(adj | adj.T) & ~touched, 1))
            if not len(cand):
                continue
            i, j = (int(v) for v in cand[rng.integers(len(cand))])
            if kind == 1:
                adj[i, j] = False
                break
            if kind == 2 and rng.integers(2):
                i, j = j, i
            if kind == 0:
                adj[i, j] = False
                i, j = j, i
            # add i -> j: a cycle iff j already reaches i
            if reachable(adj, [j])[i]:
                if kind == 0:
                    adj[j, i] = True  # undo the removal of the flipped edge
                continue
            adj[i, j] = True
            break
        else:
            cand = np.argwhere(adj & ~touched)
            i, j = (int(v) for v in cand[rng.integers(len(cand))])
            adj[i, j] = False
        touched[i, j] = touched[j, i] = True
    return Graph.from_dag_matrix(graph.names, adj)
