"""F-CMs' federation over a concept data set (App. D.1, D.3, E.6).

Each client supervises the nodes of a random ancestral sub-graph of the true DAG
around the task, some clients miss the task labels, some clients' graphs are perturbed
(App. E.6), and rows are split disjointly (:func:`concept_clients`).

Cohorts (our design choice; D.3 says only that "the client pool ... reach[es] a total
of 20 clients" and that late clients "introduce additional concept supervision"). The
first ``n_initial`` clients form the *initial* cohort (cohort 0), the others the *late*
cohort (cohort 1) that joins the federation later. A random subset of the concepts,
the *new concepts*, is never supervised by the initial cohort: its ancestor walks only
step to parents that are not new (a node whose parents are all new acts as a root for
it). The late cohort walks the full graph, and the coverage of the new concepts is
enforced within it, so late clients bring new concepts and new edges. Rows of both
cohorts come from the same distribution (the shift is in supervision, not in ``x``).

All randomness comes from the ``seed`` arguments.

A run's data (:func:`source`, :mod:`fedstruct.runs.source`): the paper's protocol
(:class:`ConceptSource`: the concept data set, its partition and its test rows, built
once per run when first read; the truth is the data set's graph), or a user's site
files (:class:`SiteConcepts`: inputs, concepts and task, and the concept graph each site
proposes: its own graph file, else by default the graph it learns from its rows with
:func:`own_fci_graph`; ``client_graphs`` in :class:`~fedstruct.methods.fcm.settings.FCMRun`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.data._shared import make_rng, round_half_up
from fedstruct.data.checks import fraction, integer_at_least
from fedstruct.data.client import ClientData, ClientsOnDemand
from fedstruct.data.graph_files import read_graph_file
from fedstruct.data.partition import balanced_sizes, client_names
from fedstruct.data.schedule import Schedule
from fedstruct.data.sites import LEVELLED, require_kinds, unobserved_as_missing
from fedstruct.discovery import fci
from fedstruct.discovery.background import knowledge_dag
from fedstruct.discovery.knowledge import Knowledge, check_graph, load_knowledge
from fedstruct.errors import ConfigError, UnknownVariableError
from fedstruct.fl import Participation
from fedstruct.graphs.graph import Graph, reachable
from fedstruct.graphs.pag import dag_member
from fedstruct.methods.fcm.concepts import ConceptDataset, make_concept_dataset, part_mask
from fedstruct.methods.fcm.settings import FCMRun
from fedstruct.runs.settings import subset
from fedstruct.runs.source import OnSites, SiteFiles, Source

__all__ = [
    "ConceptPartition",
    "ConceptSource",
    "SiteConcepts",
    "SiteGraph",
    "concept_clients",
    "flat_graph",
    "labelled_rows",
    "own_fci_graph",
    "perturb_dag",
    "roles",
    "sink",
    "source",
    "task_and_concepts",
]

#: Tries of the rejection sampler of the new concepts before its fallback.
_NEW_CONCEPT_TRIES = 100
#: Tries per edge modification before falling back to a removal.
_PERTURB_TRIES = 50

# Seed tags of the independent random streams (see concepts.py).
_TAG_NEW, _TAG_GRAPHS, _TAG_TASK, _TAG_COVER, _TAG_PERTURB, _TAG_ROWS = 11, 12, 13, 14, 15, 16


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

    clients: ClientsOnDemand
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
    row_mask = part_mask(dataset.split, parts)

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
        want = min(round_half_up(task_missing * len(members), tolerance=1e-9), len(members) - 1)
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
    n_perturbed = round_half_up(perturbed_clients * n_clients, tolerance=1e-9)
    perturbed = set(rng.choice(n_clients, size=n_perturbed, replace=False).tolist())
    client_graphs = dict(true_graphs)
    for k in sorted(perturbed):
        g = true_graphs[client_names[k]]
        n_mod = round_half_up(perturbed_edges * g.n_edges, tolerance=1e-9)
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
    parts = [np.sort(part) for part in np.split(perm, cuts)]

    def build(k: int) -> ClientData:
        idx, own = parts[k], np.flatnonzero(nodes[k])
        rows = pd.concat(
            [
                feats.iloc[idx].set_axis(idx, axis=0),
                pd.DataFrame(codes[np.ix_(idx, own)], columns=[names[v] for v in own], index=idx),
            ],
            axis=1,
        )
        name = client_names[k]
        supervised = tuple(names[v] for v in own)
        return ClientData(name, rows, supervised=supervised, graph=client_graphs[name])

    return ConceptPartition(
        clients=ClientsOnDemand(client_names, build),
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
    m = round_half_up(fraction * concepts.size, tolerance=1e-9)
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


def source(settings: FCMRun, sites: SiteFiles | None) -> ConceptSource | SiteConcepts:
    """The run's data: the user's ``sites`` (:class:`SiteConcepts`), else the paper's
    concept data set split over the clients (:class:`ConceptSource`)."""
    return ConceptSource(settings) if sites is None else SiteConcepts(settings, sites)


class ConceptSource(Source):
    """The paper's protocol (App. B.1, D.1): a concept data set built from
    ``settings.network`` and split over ``client-1 .. client-K`` (initial cohort first),
    each client with its (possibly perturbed) sub-graph, or with ``client_graphs =
    fci`` the graph it learns alone; the data set's test rows score the run against
    the data set's graph. Each is built once, when first read."""

    #: ``input_scaling = "auto"`` here: none, the inputs are generated on one scale
    #: (concepts.py), raw as the paper's.
    auto_input_scaling = "none"

    def __init__(self, settings: FCMRun):
        self.settings = settings
        self.names = tuple(client_names(settings.clients))

    @cached_property
    def data(self) -> ConceptDataset:
        """The concept data set (App. B.1)."""
        s = self.settings
        return make_concept_dataset(
            s.network,
            n_samples=s.samples or None,
            latent_dim=s.latent_dim or None,
            autoencoder_epochs=s.autoencoder_epochs,
            autoencoder_patience=s.autoencoder_patience,
            autoencoder_input=s.autoencoder_input,
            autoencoder_layout=s.autoencoder_layout,
            autoencoder_rows=s.autoencoder_rows,
            autoencoder_task=s.autoencoder_task,
            learning_rate=s.autoencoder_lr,
            noise=s.noise,
            standardise_latent=s.standardise_latent,
            seed=s.seed,
        )

    @cached_property
    def partition(self) -> ConceptPartition:
        """The data set split over the clients, with their given sub-graphs (App. D.1)."""
        s = self.settings
        return concept_clients(
            self.data,
            s.clients,
            s.initial_clients,
            paths_per_client=s.paths_per_client,
            extra_concepts=s.extra_concepts,
            task_missing=s.task_missing,
            new_concept_fraction=s.new_concept_fraction,
            perturbed_clients=s.perturbed_clients,
            perturbed_edges=s.perturbed_edges,
            seed=s.seed,
        )

    def clients(self) -> ClientsOnDemand:
        """The federated clients (built when read): the partition's, each with its
        sub-graph (``client_graphs`` ``auto`` or ``given``: every client holds one),
        the graph it learns alone (``fci``, :func:`own_fci_graph`) or none (``flat``)."""
        clients = self.partition.clients
        mode = self.settings.client_graphs
        if mode == "fci":
            knowledge = load_knowledge(self.settings.knowledge)
            return clients.map(
                lambda c: dataclasses.replace(c, graph=own_fci_graph(c, knowledge=knowledge))
            )
        if mode == "flat":
            return clients.map(lambda c: dataclasses.replace(c, graph=None))
        return clients

    @property
    def truth(self) -> Graph:
        """The data set's graph."""
        return self.data.graph

    @property
    def test(self) -> pd.DataFrame:
        """The data set's test rows (no client holds them), fully labelled."""
        return self.partition.test

    @property
    def task(self) -> str:
        """The task variable."""
        return self.data.task

    @property
    def cardinalities(self) -> dict[str, int]:
        """Every variable's number of levels (concepts and task)."""
        return self.data.cardinalities

    def participation(self) -> Participation:
        """The initial cohort from round 1, the late cohort from
        :attr:`~fedstruct.methods.fcm.settings.FCMRun.arrival`."""
        s = self.settings
        schedule = Schedule.arrivals(list(self.names), s.initial_clients, s.arrival)
        return subset(s, Participation, schedule=schedule)


def own_fci_graph(
    client: ClientData, task: str | None = None, knowledge: Knowledge | None = None
) -> Graph:
    """The graph a client learns alone from its supervised columns (concepts, task).

    Its FCI PAG (:func:`~fedstruct.discovery.fci`: G² test, α = 0.05) on its rows
    labelled in every supervised column (a missing label, ``-1``, leaves its row out:
    :func:`labelled_rows`), as one DAG of its class
    (:func:`~fedstruct.graphs.pag.dag_member`, bidirected edges dropped). A column
    constant there says nothing about dependence: it is left isolated.

    With ``task``, the task is made a sink: an edge out of it is reversed. A concept
    model predicts the task from the concepts (F-CMs §2.1; the protocol's task is a
    leaf of the true graph, App. D.1), whereas a DAG of the class may point the task
    at the concepts it explains (with concepts independent given the task, FCI finds
    no collider at the task, so at most one edge of the DAG enters it). Reversing
    edges out of a node cannot close a cycle (none then leaves it).

    With ``knowledge``, the part over the client's columns
    (:meth:`~fedstruct.discovery.knowledge.Knowledge.restrict`: no
    ``forbidden_adjacent``, which a subset of the variables does not keep) goes to FCI
    (forbidden adjacencies never tested, required ones never removed, the marks it
    implies), and the DAG, after the sink, is made true to it
    (:func:`~fedstruct.discovery.background.knowledge_dag`, every edge of equal
    support): an edge into the task that the knowledge denies goes, a required edge
    out of the task stays (the knowledge overrides the sink), and a directed path the
    DAG member chose through a circle component against the knowledge is cut.
    """
    rows = labelled_rows(client)
    varying = [c for c in rows.columns if rows[c].nunique() > 1]
    if not varying:
        return Graph.empty(client.supervised)
    local = None if knowledge is None else knowledge.restrict(varying)
    pag = fci(rows[varying].reset_index(drop=True), knowledge=local).graph
    dag = dag_member(pag).expand(client.supervised)
    if task is not None and task in dag:
        dag = sink(dag, task)
    if local is None or local.is_empty:
        return dag
    rules = knowledge.restrict(dag.names).resolve(dag.names)  # type: ignore[union-attr]
    return Graph.from_dag_matrix(
        dag.names, knowledge_dag(dag.directed(), np.ones((dag.n_nodes,) * 2), rules)
    )


def labelled_rows(client: ClientData) -> pd.DataFrame:
    """The client's supervised columns on the rows labelled in all of them (a missing
    label is ``-1``, :class:`~fedstruct.data.ClientData`)."""
    rows = client.rows[list(client.supervised)]
    return rows[(rows >= 0).all(axis=1)]


def sink(dag: Graph, node: str) -> Graph:
    """``dag`` with every edge out of ``node`` reversed (still a DAG: :func:`own_fci_graph`)."""
    marks = dag.marks.copy()
    i = dag.index(node)
    out = np.flatnonzero(dag.directed()[i])
    marks[i, out], marks[out, i] = marks[out, i], marks[i, out]
    return Graph(dag.names, marks)


def flat_graph(concepts: Sequence[str], task: str) -> Graph:
    """The flat concept graph: every concept a parent of the task, no other edge (the
    bipartite structure of CBMs, F-CMs §2.1; ``client_graphs = flat``)."""
    return Graph.from_edges([*concepts, task], [(c, task) for c in concepts])


@dataclass(frozen=True)
class SiteGraph:
    """Where a site's proposed concept graph comes from.

    Attributes
    ----------
    how
        ``given`` (its ``graph:`` file), ``learned`` (from its own rows) or ``none``.
    edges
        Its edges among the variables the site supervises.
    source
        The graph file, for a given graph.
    rows
        The rows it was learned from, for a learned graph.
    """

    how: str
    edges: int
    source: str | None = None
    rows: int | None = None


class SiteConcepts(OnSites):
    """A user's site files for F-CMs: which columns are the inputs, the concepts and
    the task (the settings over the manifest's ``inputs``/``concepts``/``task``), the
    files read with the concepts and the task supervised (a missing value is a missing
    label; a site without a label column does not supervise it), and the concept graph
    each site proposes (``client_graphs``: its own, ``graph:`` in the manifest or a
    node's ``--graph``, else learned from its rows). An input a site does not observe
    is missing at every row there (:attr:`unobserved`)."""

    #: ``input_scaling = "auto"`` here: a user's table gets the federated statistics
    #: step.
    auto_input_scaling = "federated"

    @cached_property
    def _roles(self) -> tuple[tuple[str, ...], tuple[str, ...], str]:
        """(inputs, concepts, task), checked against the sites' columns.

        Raises
        ------
        ConfigError
            If no task or no concept is named, or a column is named both an input and
            a concept or the task.
        UnknownVariableError
            If a role names a column no site has.
        DataError
            If a concept or the task is continuous.
        """
        s, sites = self.settings, self.sites
        task, concepts = task_and_concepts(s, sites.roles)
        variables = sites.schema.variables
        others = [v for v in variables if v != task and v not in concepts]
        inputs = tuple(sites.role(s.inputs, "inputs", ()) or others)
        unknown = [v for v in (*inputs, *concepts, task) if v not in variables]
        if unknown:
            raise UnknownVariableError(
                f"no site has the columns {unknown}; the sites' columns are {list(variables)}"
            )
        both = set(inputs) & {*concepts, task}
        if both:
            raise ConfigError(f"columns {sorted(both)} are named both inputs and concepts or task")
        require_kinds(sites.schema, LEVELLED, method="F-CMs (concepts, task)",
                      variables=(*concepts, task))  # fmt: skip
        return inputs, concepts, task

    @property
    def input_columns(self) -> tuple[str, ...]:
        """The input columns (default: every column that is not a concept or the task)."""
        return self._roles[0]

    @property
    def concepts(self) -> tuple[str, ...]:
        """The concept columns."""
        return self._roles[1]

    @property
    def task(self) -> str:
        """The task column."""
        return self._roles[2]

    @property
    def labels(self) -> tuple[str, ...]:
        """The concepts, then the task."""
        return (*self.concepts, self.task)

    @property
    def unobserved(self) -> dict[str, tuple[str, ...]]:
        """Site -> the input columns it does not observe (sites that observe every
        input left out): missing at every row there, imputed from the other sites'
        statistics with their missing indicator on
        (:attr:`~fedstruct.methods.fcm.config.FCMConfig.input_scaling`)."""
        schema = self.sites.schema
        found = {
            site: tuple(v for v in schema.unobserved(site) if v in self.input_columns)
            for site in schema.sites
        }
        return {site: columns for site, columns in found.items() if columns}

    @property
    def cardinalities(self) -> dict[str, int]:
        """The levels of every concept and the task."""
        levels = self.sites.schema.cardinalities()
        return {v: levels[v] for v in self.labels}

    def participation(self) -> Participation:
        """The participation settings over the sites."""
        return self.settings.participation(self.names)

    def clients(self) -> list[ClientData]:
        """The sites read here as F-CMs clients (a deployed node: its own; its server:
        none): inputs, then the concepts and the task each site has (supervised), and
        the concept graph it proposes (:attr:`site_graphs`)."""
        return [client for client, _ in self._clients]

    @property
    def site_graphs(self) -> dict[str, SiteGraph]:
        """Site read here -> where its proposed graph comes from (``client_graphs``):
        its ``graph:`` file restricted to what it supervises, the graph it learns from
        its own rows (:func:`own_fci_graph`, the task a sink), or none."""
        return {client.name: how for client, how in self._clients}

    @cached_property
    def _clients(self) -> list[tuple[ClientData, SiteGraph]]:
        """Each site read here as a client, with its :class:`SiteGraph` (learned once)."""
        mode, given_graph = self.settings.client_graphs, bool(self.settings.graph)
        files = self.sites.view.graphs
        knowledge = load_knowledge(self.settings.knowledge)
        out = []
        for read in self.sites.clients():
            client = unobserved_as_missing(read, self.sites.schema, self.input_columns)
            labels = [v for v in self.labels if v in client.variables]
            own = dataclasses.replace(
                client.select([*self.input_columns, *labels]), supervised=tuple(labels)
            )
            path = files.get(client.name) if mode in ("auto", "given") else None
            if path:
                where = f"the graph file {path} of site {client.name!r}"
                proposed = check_graph(read_graph_file(path), knowledge, where)
                graph = proposed.restrict([v for v in labels if v in proposed])
                how = SiteGraph("given", graph.n_edges, source=path)
            elif mode == "fci" or (mode == "auto" and not given_graph):
                graph = own_fci_graph(own, self.task, knowledge)
                how = SiteGraph("learned", graph.n_edges, rows=len(labelled_rows(own)))
            else:
                graph, how = None, SiteGraph("none", 0)
            out.append((dataclasses.replace(own, graph=graph), how))
        return out


def task_and_concepts(s: FCMRun, given: Mapping[str, Any]) -> tuple[str, tuple[str, ...]]:
    """The task and the concept columns: the settings', else the manifest's options
    ``given``.

    Raises
    ------
    ConfigError
        If no task or no concept is named.
    """
    task = s.task or given.get("task", "")
    concepts = tuple(s.concepts or given.get("concepts", ()))
    if not task or not concepts:
        raise ConfigError(
            "F-CMs on your files needs the task and the concept columns: "
            "--set task=COLUMN --set concepts=[A,B,...] (or task: / concepts: in the manifest)"
        )
    return task, concepts


def roles(s: FCMRun, given: Mapping[str, Any]) -> dict[str, list[str]]:
    """The columns every site's file is read with as supervised: the concepts and the
    task (a missing value is a missing label), from the settings over the manifest's
    options ``given``.

    Raises
    ------
    ConfigError
        If no task or no concept is named.
    """
    task, concepts = task_and_concepts(s, given)
    return {"supervised": [*concepts, task]}
