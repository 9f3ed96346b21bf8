"""FedNGM's federations (§3.2): public data plus clients that over-represent sub-populations.

Half of the rows, stratified by some key variables, are public; each client draws a
large subset of the other half in which one sub-population is over-represented
(clients may overlap, as the paper's three 600,000-row subsets of ~2M rows do); each
client also keeps variables the others do not have (the paper's Stitching setting,
§2.4). :func:`health_insurance_federation` arranges the RAND HIE table
(:mod:`fedstruct.data.datasets.rand_hie`) this way, :func:`synthetic_federation` any
mixed data set with a known graph (:func:`fedstruct.data.mixed.make_mixed_data`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.data._shared import SeedLike, child_seed, make_rng, round_half_up
from fedstruct.data.checks import fraction
from fedstruct.data.client import ClientData, ClientsOnDemand
from fedstruct.data.datasets.rand_hie import load_health_insurance
from fedstruct.data.mixed import CATEGORICAL_KINDS, MixedDataset, make_mixed_data
from fedstruct.data.partition import client_names
from fedstruct.data.sites import FederationSchema
from fedstruct.errors import PartitionError, UnknownVariableError
from fedstruct.graphs import Graph
from fedstruct.methods.fedngm.settings import FedNGMRun
from fedstruct.runs.source import OnSites, SiteFiles, Source

__all__ = [
    "HEALTH_SHARES",
    "HEALTH_TARGETS",
    "MixedSites",
    "Segment",
    "SubpopulationFederation",
    "SubpopulationSource",
    "health_insurance_federation",
    "site_kinds",
    "source",
    "subpopulation_clients",
    "synthetic_federation",
    "targets",
]

#: The four prediction targets, one per kind, as in FedNGM §3.2 (gestational age,
#: birthweight, survival, cause of death).
HEALTH_TARGETS: dict[str, str] = {
    "ordinal": "visits",
    "continuous": "disea",
    "binary": "deductible",
    "multiclass": "health",
}


@dataclass(frozen=True)
class Segment:
    """A sub-population a client over-represents (FedNGM §3.2).

    Parameters
    ----------
    variable
        The column that defines the segment.
    values
        For a binary or categorical column: the codes in the segment (e.g. ``(2, 3)``).
        For a real or ordinal column: an inclusive range ``(low, high)``; a row is in
        the segment when ``low <= value <= high``.
    share
        Share of the client's rows drawn from the segment, in ``(0, 1]``.
    """

    variable: str
    values: tuple
    share: float = 0.6

    def __post_init__(self) -> None:
        values = self.values
        if isinstance(values, str) or not isinstance(values, Sequence):
            values = (values,)
        object.__setattr__(self, "values", tuple(values))
        if not self.values:
            raise PartitionError(f"segment on {self.variable!r} has no values; give at least one")
        share = self.share
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
            raise PartitionError(
                f"segment on {self.variable!r} has share {share!r}; give a number in (0, 1]"
            )

    def mask(self, dataset: MixedDataset) -> NDArray[np.bool_]:
        """Which rows of ``dataset`` are in the segment.

        Raises
        ------
        UnknownVariableError
            If the dataset has no such column.
        PartitionError
            If a code is outside the column's ``0..k-1``, or a range of a continuous
            column is not ``(low, high)`` with ``low <= high``.
        """
        var = self.variable
        if var not in dataset.kinds:
            raise UnknownVariableError(
                f"segment variable {var!r} is not a column of {dataset.name!r}; "
                f"its columns are {list(dataset.names)}"
            )
        column = dataset.frame[var].to_numpy()
        kind = dataset.kinds[var]
        if kind in CATEGORICAL_KINDS:
            k = dataset.cardinalities[var]
            bad = [
                v
                for v in self.values
                if isinstance(v, bool) or not isinstance(v, int | np.integer) or not 0 <= v < k
            ]
            if bad:
                raise PartitionError(
                    f"segment on {kind} {var!r} has values {bad}; give codes in 0..{k - 1}"
                )
            return np.isin(column, np.asarray(self.values, dtype=np.int64))
        ok = len(self.values) == 2 and all(
            isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool)
            for v in self.values
        )
        if not ok or self.values[0] > self.values[1]:
            raise PartitionError(
                f"segment on {kind} {var!r} has values {self.values}; give an inclusive "
                "range (low, high) with low <= high"
            )
        low, high = self.values
        return (column >= low) & (column <= high)


@dataclass(frozen=True, eq=False)
class SubpopulationFederation:
    """Public data plus clients that over-represent sub-populations (FedNGM §3.2).

    Row labels of every frame are the row positions in ``dataset.frame``, so the
    parts can be related to each other and to the full table.

    Attributes
    ----------
    dataset
        The full data set.
    public
        The public rows used for training (all columns), e.g. the extra regression
        term of FedNGM Eq. 3.
    public_test
        Held-out public rows (all columns): the "public data" test set (§3.3, Table 4).
    clients
        One :class:`ClientData` per client with its *training* rows and its columns:
        the common variables plus its private ones (each built when first read).
    client_test
        Each client's held-out rows, from the same distribution as its training rows,
        with the same columns (each built when first read).
    private
        Client name -> the variables only that client keeps.
    common
        The variables every client holds (all columns minus every private one).
    segments
        Client name -> the segment it over-represents.
    """

    dataset: MixedDataset
    public: pd.DataFrame
    public_test: pd.DataFrame
    clients: ClientsOnDemand
    client_test: Mapping[str, pd.DataFrame]
    private: dict[str, tuple[str, ...]]
    common: tuple[str, ...]
    segments: dict[str, Segment] = field(default_factory=dict)

    @property
    def client_names(self) -> tuple[str, ...]:
        """The clients' names, in order."""
        return self.clients.names

    def client(self, name: str) -> ClientData:
        """The client called ``name`` (built if it is not yet).

        Raises
        ------
        UnknownVariableError
            If there is no such client.
        """
        if name not in self.client_names:
            raise UnknownVariableError(f"no client {name!r}; clients are {list(self.client_names)}")
        return self.clients[self.client_names.index(name)]


class _FramesOnDemand(Mapping[str, pd.DataFrame]):
    """Name -> a frame built the first time it is read (and kept)."""

    def __init__(self, build: Mapping[str, Callable[[], pd.DataFrame]]) -> None:
        self._build = dict(build)
        self._built: dict[str, pd.DataFrame] = {}

    def __getitem__(self, name: str) -> pd.DataFrame:
        if name not in self._built:
            self._built[name] = self._build[name]()
        return self._built[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._build)

    def __len__(self) -> int:
        return len(self._build)


def _open_fraction(value: object, what: str) -> float:
    return fraction(value, what, open_interval=True, error=PartitionError)


def _strata(dataset: MixedDataset, stratify: Sequence[str]) -> NDArray[np.int64]:
    """Stratum id per row: codes of categorical columns, quartile bins of continuous ones."""
    n = dataset.n_rows
    if not stratify:
        return np.zeros(n, dtype=np.int64)
    columns = []
    for var in stratify:
        if var not in dataset.kinds:
            raise UnknownVariableError(
                f"stratify variable {var!r} is not a column of {dataset.name!r}; "
                f"its columns are {list(dataset.names)}"
            )
        x = dataset.frame[var].to_numpy()
        if dataset.kinds[var] in CATEGORICAL_KINDS:
            columns.append(x.astype(np.int64))
        else:
            edges = np.quantile(x, [0.25, 0.5, 0.75])
            columns.append(np.searchsorted(edges, x, side="right"))
    _, ids = np.unique(np.stack(columns, axis=1), axis=0, return_inverse=True)
    return ids.reshape(-1).astype(np.int64)


def _allocate(counts: NDArray[np.int64], total: int) -> NDArray[np.int64]:
    """Split ``total`` over strata in proportion to ``counts`` (largest remainder).

    Hamilton's method: floors of the exact quotas, then one more to the strata with the
    largest remainders (ties to the earlier stratum).
    """
    if total <= 0 or counts.sum() == 0:
        return np.zeros_like(counts)
    exact = counts * (total / counts.sum())
    out = np.minimum(np.floor(exact).astype(np.int64), counts)
    order = np.argsort(-(exact - np.floor(exact)), kind="stable")
    for s in order:
        if out.sum() >= total:
            break
        if out[s] < counts[s]:
            out[s] += 1
    return out


def _group_order(rows: NDArray[np.int64], groups: NDArray[np.int64], rng: np.random.Generator):
    """``rows`` in a random order of their groups, each group's rows together.

    Taking a prefix of the result draws whole groups at random without replacement;
    only the group at the cut can be split.
    """
    _, inverse = np.unique(groups[rows], return_inverse=True)
    keys = rng.random(int(inverse.max()) + 1 if rows.size else 0)[inverse]
    return rows[np.lexsort((rows, keys))]


def _take(
    rows: NDArray[np.int64],
    strata: NDArray[np.int64],
    groups: NDArray[np.int64],
    total: int,
    rng: np.random.Generator,
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Choose ``total`` of ``rows``, stratified, whole groups first: (chosen, rest)."""
    labels, counts = np.unique(strata[rows], return_counts=True)
    quota = _allocate(counts, total)
    chosen = []
    for label, q in zip(labels, quota, strict=True):
        ordered = _group_order(rows[strata[rows] == label], groups, rng)
        chosen.append(ordered[:q])
    picked = np.sort(np.concatenate(chosen)) if chosen else np.empty(0, dtype=np.int64)
    return picked, np.setdiff1d(rows, picked)


def _check_private(
    dataset: MixedDataset,
    names: Sequence[str],
    private: Mapping[str, Sequence[str]] | None,
    segments: Sequence[Segment],
) -> dict[str, tuple[str, ...]]:
    out = {name: () for name in names}
    owner: dict[str, str] = {}
    for client, variables in (private or {}).items():
        if client not in out:
            raise PartitionError(
                f"private variables are given for {client!r}, which is not a client; "
                f"clients are {list(names)}"
            )
        if isinstance(variables, str):
            variables = (variables,)
        for var in variables:
            if var not in dataset.kinds:
                raise UnknownVariableError(
                    f"client {client!r}'s private variable {var!r} is not a column of "
                    f"{dataset.name!r}; its columns are {list(dataset.names)}"
                )
            if var in owner and owner[var] != client:
                raise PartitionError(
                    f"variable {var!r} is private to both {owner[var]!r} and {client!r}; "
                    "give each private variable to one client"
                )
            owner[var] = client
        out[client] = tuple(v for v in dataset.names if v in set(variables))
    for name, seg in zip(names, segments, strict=True):
        if seg.variable in owner:
            raise PartitionError(
                f"client {name!r}'s segment variable {seg.variable!r} is private to "
                f"{owner[seg.variable]!r}; segment variables must be common to all clients"
            )
    return out


def subpopulation_clients(
    dataset: MixedDataset,
    segments: Sequence[Segment],
    *,
    names: Sequence[str] | None = None,
    public_fraction: float = 0.5,
    client_fraction: float = 0.4,
    test_fraction: float = 0.2,
    public_test_fraction: float = 0.2,
    private: Mapping[str, Sequence[str]] | None = None,
    stratify: Sequence[str] = (),
    seed: SeedLike = 0,
) -> SubpopulationFederation:
    """Public data plus one client per segment, each over-representing its segment.

    The recipe of FedNGM §3.2, with sizes made exact (``round`` is half-up):

    1. **Public split.** ``round(public_fraction · N)`` rows are public, stratified by
       the ``stratify`` columns (codes of binary/categorical columns, quartile bins of
       real/ordinal ones; each stratum gives its share by largest remainder). The
       other rows are the private *pool*. ``round(public_test_fraction · public)`` of
       the public rows (stratified the same way) are held out as ``public_test``.
    2. **Clients.** Client ``i`` draws ``m = round(client_fraction · |pool|)`` rows of
       the pool without replacement: ``round(share · m)`` from its segment's rows and
       the rest from the other rows. Different clients draw independently, so they
       may share rows (the paper's three 600,000-row subsets of ~2M births overlap).
    3. **Client test rows.** ``round(test_fraction · m)`` of the client's rows, split
       over in- and out-of-segment rows in proportion (largest remainder), are its
       test rows; the rest are its training rows. Both therefore keep the segment
       share (exactly, up to one row of rounding).
    4. **Columns.** ``private[c]`` are variables only client ``c`` keeps; ``common`` is
       every column not private to any client. A client's columns are the common ones
       plus its private ones, in the table's order; codes stay ``int64``.

    When the data set has ``groups`` (e.g. a person observed in several years), every
    draw takes whole groups in random order, so a group lands on one side of each
    split except possibly the one group at each cut (one per stratum and segment part).

    Parameters
    ----------
    dataset
        The full table.
    segments
        One segment per client.
    names
        Client names (default ``client-1 .. client-K``).
    public_fraction, client_fraction, test_fraction, public_test_fraction
        The shares above, each strictly between 0 and 1.
    private
        Client name -> variables only that client keeps.
    stratify
        Columns that stratify the public split.
    seed
        Seed of every draw.

    Raises
    ------
    UnknownVariableError
        A segment, private or stratify variable that is not a column.
    PartitionError
        A fraction outside ``(0, 1)``; a variable private to two clients; a segment
        variable that is private (so the segment variables always stay common); a
        segment that matches no row; a segment too small for its client's share (the
        message gives the counts and what to lower); a client, public part or test
        part left with no rows; names that do not match the segments.
    """
    segments = list(segments)
    if not segments:
        raise PartitionError("give at least one segment (one per client)")
    names = [f"client-{k + 1}" for k in range(len(segments))] if names is None else list(names)
    if len(names) != len(segments) or len(set(names)) != len(names):
        raise PartitionError(
            f"give {len(segments)} unique client names (one per segment), got {names}"
        )
    public_fraction = _open_fraction(public_fraction, "public_fraction")
    client_fraction = _open_fraction(client_fraction, "client_fraction")
    test_fraction = _open_fraction(test_fraction, "test_fraction")
    public_test_fraction = _open_fraction(public_test_fraction, "public_test_fraction")
    masks = [seg.mask(dataset) for seg in segments]
    for name, seg, mask in zip(names, segments, masks, strict=True):
        if not mask.any():
            raise PartitionError(
                f"client {name!r}'s segment {seg.variable} in {list(seg.values)} matches no "
                "row; choose values that occur in the data"
            )
    owned = _check_private(dataset, names, private, segments)
    strata = _strata(dataset, tuple(stratify))
    n = dataset.n_rows
    groups = dataset.groups if dataset.groups is not None else np.arange(n, dtype=np.int64)
    rng = make_rng(seed)
    everything = np.arange(n, dtype=np.int64)

    public_all, pool = _take(everything, strata, groups, round_half_up(public_fraction * n), rng)
    public_test, public = _take(
        public_all, strata, groups, round_half_up(public_test_fraction * public_all.size), rng
    )
    for what, part in (("public", public), ("public test", public_test), ("private pool", pool)):
        if part.size == 0:
            raise PartitionError(
                f"the {what} part of {dataset.name!r} ({n} rows) would have no rows; "
                "change public_fraction or public_test_fraction"
            )

    private_vars = {v for vs in owned.values() for v in vs}
    common = tuple(v for v in dataset.names if v not in private_vars)
    size = round_half_up(client_fraction * pool.size)
    frame = dataset.frame
    train_rows, test_rows = [], {}
    for name, seg, mask in zip(names, segments, masks, strict=True):
        inside, outside = pool[mask[pool]], pool[~mask[pool]]
        n_in = round_half_up(seg.share * size)
        n_out = size - n_in
        if n_in > inside.size or n_out > outside.size:
            most = inside.size / size
            raise PartitionError(
                f"client {name!r} needs {n_in} rows of segment {seg.variable} in "
                f"{list(seg.values)} and {n_out} others, but the pool ({pool.size} rows) has "
                f"{inside.size} and {outside.size}; lower its share to <= {most:.3f} or "
                "client_fraction"
            )
        drawn_in = _group_order(inside, groups, rng)[:n_in]
        drawn_out = _group_order(outside, groups, rng)[:n_out]
        n_test = round_half_up(test_fraction * size)
        test_in, test_out = _allocate(np.array([n_in, n_out], dtype=np.int64), n_test)
        test = np.sort(np.concatenate([drawn_in[:test_in], drawn_out[:test_out]]))
        train = np.sort(np.concatenate([drawn_in[test_in:], drawn_out[test_out:]]))
        if train.size == 0 or test.size == 0:
            raise PartitionError(
                f"client {name!r} would have {train.size} training and {test.size} test rows; "
                "raise client_fraction or change test_fraction"
            )
        train_rows.append(train)
        test_rows[name] = test

    def columns(name: str) -> list[str]:
        return [v for v in dataset.names if v in set(common) or v in owned[name]]

    def training_client(k: int) -> ClientData:
        return ClientData(names[k], frame.loc[train_rows[k], columns(names[k])])

    def test_frame(name: str) -> Callable[[], pd.DataFrame]:
        return lambda: frame.loc[test_rows[name], columns(name)]

    return SubpopulationFederation(
        dataset=dataset,
        public=frame.loc[public],
        public_test=frame.loc[public_test],
        clients=ClientsOnDemand(names, training_client),
        client_test=_FramesOnDemand({name: test_frame(name) for name in names}),
        private=owned,
        common=common,
        segments=dict(zip(names, segments, strict=True)),
    )


#: Default segment shares of :func:`health_insurance_federation` (see its docstring).
HEALTH_SHARES: tuple[float, float, float] = (0.8, 0.2, 0.6)


def health_insurance_federation(
    seed: SeedLike = 0,
    *,
    shares: Sequence[float] = HEALTH_SHARES,
    **kwargs: Any,
) -> SubpopulationFederation:
    """FedNGM's three-client setting (§3.2) on the RAND HIE table.

    * ``client-1`` over-represents free care (``plan`` 0), share 0.8 — the paper's
      mothers on Medicaid or without insurance;
    * ``client-2`` over-represents fair or poor health (``health`` 2 or 3), share 0.2
      — the paper's births by caesarean section;
    * ``client-3`` over-represents the individual deductible (``deductible`` 1),
      share 0.6 — the paper's mothers with a college degree.

    ``plan`` 0 (zero coinsurance as statsmodels codes it) also holds the 4,175 rows
    of the individual-deductible plan that ``lncoins`` records without coinsurance
    (see :func:`load_health_insurance`).

    Shares: ``plan`` 0 is already 54 % of the rows, so 0.6 would barely over-represent
    it; 0.8 does. Fair or poor health is 9.2 % of the rows — about 930 pool rows,
    against the 4,038 a client draws by default — so its share is 0.2 (2.2 times the
    population rate; 0.6 cannot be met). The deductible (26 %) takes 0.6.

    The public half is stratified by ``deductible`` and ``health``. Each client keeps
    one variable the others lack: ``client-1`` ``fmde``, ``client-2`` ``physlm``,
    ``client-3`` ``lpi``; the common variables are ``visits``, ``plan``,
    ``deductible``, ``disea`` and ``health`` (every target in :data:`HEALTH_TARGETS`).
    A person's years stay on one side of each split (see :func:`subpopulation_clients`).

    Parameters
    ----------
    seed
        Seed of every draw.
    shares
        Segment shares of the three clients.
    **kwargs
        Passed to :func:`subpopulation_clients` (e.g. ``client_fraction``); ``private``
        and ``stratify`` override the defaults above.
    """
    shares = tuple(shares)
    if len(shares) != 3:
        raise PartitionError(f"give three segment shares (one per client), got {len(shares)}")
    segments = [
        Segment("plan", (0,), shares[0]),
        Segment("health", (2, 3), shares[1]),
        Segment("deductible", (1,), shares[2]),
    ]
    options: dict[str, Any] = {
        "private": {"client-1": ("fmde",), "client-2": ("physlm",), "client-3": ("lpi",)},
        "stratify": ("deductible", "health"),
        **kwargs,
    }
    data = load_health_insurance()
    return subpopulation_clients(data, segments, seed=seed, **options)


def synthetic_federation(
    dataset: MixedDataset,
    *,
    n_clients: int = 3,
    n_private: int = 1,
    share: float = 0.6,
    seed: SeedLike = 0,
    **kwargs: Any,
) -> SubpopulationFederation:
    """FedNGM's setting (§3.2) on any mixed data set, e.g. :func:`make_mixed_data`'s.

    Client ``i`` over-represents one category of its own binary or categorical
    variable with ``share`` of its rows. A (variable, category) pair qualifies when
    the category is rare enough to be over-represented (frequency ≤ ``share / 1.25``)
    and common enough to supply the share from the pool with a 10 % margin
    (frequency ≥ ``share · client_fraction / 0.9``); the seed picks ``n_clients``
    distinct qualifying variables and one qualifying category of each. Then the seed
    picks ``n_private`` distinct variables per client, private to it, among the
    variables that are neither segment nor stratify variables (and, when the data set
    has a graph, have a neighbour in it, if there are enough such variables). The public split is
    stratified by the segment variables unless ``stratify`` is given.

    Parameters
    ----------
    dataset
        The data set.
    n_clients, n_private
        Number of clients and of private variables per client (``n_private`` may be 0).
    share
        Segment share of every client.
    seed
        Seed of the choices and of every draw.
    **kwargs
        Passed to :func:`subpopulation_clients`.

    Raises
    ------
    PartitionError
        If fewer than ``n_clients`` categorical variables have a qualifying category,
        or there are too few other variables to make private.
    """
    if isinstance(n_clients, bool) or not isinstance(n_clients, int) or n_clients < 1:
        raise PartitionError(f"n_clients is {n_clients!r}; give a positive integer")
    if isinstance(n_private, bool) or not isinstance(n_private, int) or n_private < 0:
        raise PartitionError(f"n_private is {n_private!r}; give an integer >= 0")
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
        raise PartitionError(f"share is {share!r}; give a number in (0, 1]")
    client_fraction = kwargs.get("client_fraction", 0.4)
    client_fraction = _open_fraction(client_fraction, "client_fraction")
    low, high = share * client_fraction / 0.9, share / 1.25
    candidates: dict[str, list[int]] = {}
    for var in dataset.categorical:
        freq = np.bincount(dataset.frame[var].to_numpy(), minlength=dataset.cardinalities[var])
        freq = freq / dataset.n_rows
        ok = [int(c) for c in np.flatnonzero((freq >= low) & (freq <= high))]
        if ok:
            candidates[var] = ok
    if len(candidates) < n_clients:
        raise PartitionError(
            f"{dataset.name!r} has {len(candidates)} binary/categorical variables with a "
            f"category of frequency in [{low:.3f}, {high:.3f}] (needed for share {share} "
            f"and client_fraction {client_fraction}), fewer than {n_clients} clients; "
            "lower n_clients or client_fraction, or change share"
        )
    rng = make_rng(seed)
    pool = sorted(candidates, key=dataset.names.index)
    chosen = [pool[int(i)] for i in rng.choice(len(pool), size=n_clients, replace=False)]
    segments = [Segment(v, (int(rng.choice(candidates[v])),), share) for v in chosen]
    stratify = tuple(kwargs.pop("stratify", tuple(chosen)))
    given = kwargs.pop("names", None)
    names = [f"client-{k + 1}" for k in range(n_clients)] if given is None else list(given)
    if len(names) != n_clients:
        raise PartitionError(f"give {n_clients} client names, got {len(names)}")
    if "private" in kwargs:
        private = kwargs.pop("private")
    else:
        others = [v for v in dataset.names if v not in set(chosen) and v not in set(stratify)]
        if dataset.graph is not None:  # a variable with no neighbour has nothing to stitch
            linked = [v for v in others if dataset.graph.neighbors(v)]
            others = linked if len(linked) > n_clients * n_private else others
        need = n_clients * n_private
        if need > len(others) - 1:
            raise PartitionError(
                f"{n_clients} clients x {n_private} private variables need {need} of the "
                f"{len(others)} non-segment variables and one must stay common; lower n_private"
            )
        picked = [others[int(i)] for i in rng.choice(len(others), size=need, replace=False)]
        private = {
            name: tuple(picked[k * n_private : (k + 1) * n_private]) for k, name in enumerate(names)
        }
    return subpopulation_clients(
        dataset,
        segments,
        names=names,
        private=private,
        stratify=stratify,
        seed=child_seed(seed, 1),
        **kwargs,
    )


def source(s: FedNGMRun, sites: SiteFiles | None) -> SubpopulationSource | MixedSites:
    """The run's data: the user's ``sites``, else the paper's federation of
    ``s.dataset`` (:class:`SubpopulationSource`)."""
    return SubpopulationSource(s) if sites is None else MixedSites(s, sites)


class SubpopulationSource(Source):
    """The paper's federation (§3.2) of ``settings.dataset``: the RAND HIE table
    (:func:`health_insurance_federation`) or a mixed-type random SCM
    (:func:`~fedstruct.data.mixed.make_mixed_data`, ``variables`` x ``samples``)
    arranged the same way (:func:`synthetic_federation`); built once, when first read.

    The master holds the public training rows (:attr:`public`, FedNGM's eq. 3); the
    clients' held-out rows and the public test rows are the run's test sets.
    """

    #: Share of each client's rows it keeps out itself: none, the federation has its own.
    held_out = 0.0

    def __init__(self, settings: FedNGMRun):
        self.settings = settings
        self.names = tuple(client_names(settings.clients))

    @cached_property
    def dataset(self) -> MixedDataset:
        """The full table: the synthetic SCM's data (with its graph), or the RAND HIE
        table (read with its federation)."""
        s = self.settings
        if s.dataset == "health":
            return self.federation.dataset
        return make_mixed_data(s.variables, s.samples, seed=s.seed)

    @cached_property
    def federation(self) -> SubpopulationFederation:
        """The public rows, the clients and every test set."""
        s = self.settings
        if s.dataset == "health":
            return health_insurance_federation(seed=s.seed)
        return synthetic_federation(self.dataset, n_clients=s.clients, seed=s.seed)

    def clients(self) -> ClientsOnDemand:
        """The clients' training rows (each built when read)."""
        return self.federation.clients

    @property
    def truth(self) -> Graph | None:
        """The synthetic SCM's graph (the health table has none)."""
        return self.dataset.graph

    @property
    def kinds(self) -> dict[str, str]:
        """FedNGM's kind of every variable of the table."""
        return self.dataset.kinds

    @property
    def public(self) -> pd.DataFrame:
        """The public training rows the master holds."""
        return self.federation.public


class MixedSites(OnSites):
    """A user's site files, every column read as FedNGM models it
    (:func:`site_kinds`); each site keeps ``test_fraction`` of its rows out itself
    (:class:`~fedstruct.methods.fedngm.FedNGMClient`) to score the released model on.
    A user's sites have no public rows."""

    public = None

    @property
    def held_out(self) -> float:
        """Share of each site's rows it keeps out of training."""
        return self.settings.test_fraction

    @cached_property
    def kinds(self) -> dict[str, str]:
        """FedNGM's kind of every column of the sites."""
        return site_kinds(self.sites.schema)


def targets(fed: SubpopulationFederation) -> dict[str, str]:
    """Target kind -> variable: the health table's (``HEALTH_TARGETS``), or for
    synthetic data the common variable of each kind with the most neighbours in the
    true graph (an isolated variable is best predicted by its mean)."""
    if set(HEALTH_TARGETS.values()) <= set(fed.common):
        return dict(HEALTH_TARGETS)
    kinds = fed.dataset.kinds
    wanted = {"ordinal": "ordinal", "continuous": "real", "binary": "binary",
              "multiclass": "categorical"}  # fmt: skip
    out = {}
    for label, kind in wanted.items():
        names = [v for v in fed.common if kinds[v] == kind]
        if names:
            out[label] = max(names, key=lambda v: len(fed.dataset.graph.neighbors(v)))
    return out


def site_kinds(schema: FederationSchema) -> dict[str, str]:
    """FedNGM's kind of every variable of the sites' ``schema``: a categorical column
    with two levels is ``binary``, other categorical ones ``categorical``, ordinal
    ``ordinal``, continuous ``real``."""
    return {
        v: _fedngm_kind(schema.kinds[v], len(schema.levels.get(v, ()))) for v in schema.variables
    }


def _fedngm_kind(kind: str, n_levels: int) -> str:
    if kind == "categorical":
        return "binary" if n_levels == 2 else "categorical"
    return "ordinal" if kind == "ordinal" else "real"
