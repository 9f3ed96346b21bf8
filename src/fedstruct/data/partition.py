"""Partitioners: how a data set, or a sampler, is split over federated clients.

* :func:`horizontal` — rows split IID (every client sees every variable).
* :func:`label_skew` — long-tail class sizes then a Dirichlet split over clients (Cao
  et al. 2019 for the long tail, Hsu et al. 2019 for the Dirichlet split).

A paper's own way of building its clients (FedCDnv's variable subsets with latent
variables, FED-CD's interventional splits, ...) lives in that method's run,
``fedstruct.methods.<method>.sources``.

No partitioner drops data silently: every row (or kept index) goes to exactly one
client, and impossible requests raise :class:`~fedstruct.errors.PartitionError` or
:class:`~fedstruct.errors.SampleSizeError` saying what to change. Clients are named
``client-1 .. client-K`` unless names are given. All randomness comes from the
``seed`` argument.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from fedstruct.data._shared import SeedLike, make_rng
from fedstruct.data.client import ClientData, ClientsOnDemand
from fedstruct.errors import PartitionError, unknown_choice_message

__all__ = [
    "LABEL_SKEW_SCHEMES",
    "LabelSkewSplit",
    "Sampler",
    "balanced_sizes",
    "check_n_clients",
    "client_names",
    "horizontal",
    "label_skew",
    "long_tail_counts",
]


class Sampler(Protocol):
    """Anything that samples rows like :class:`~fedstruct.data.discrete.DiscreteNetwork`."""

    def sample(
        self, n: int, *, seed: SeedLike, interventions: Mapping[str, Any] | None = None
    ) -> pd.DataFrame:
        """``n`` rows, one column per (observed) variable."""
        ...


# ------------------------------------------------------------------ helpers
def check_n_clients(n_clients: object) -> int:
    """``n_clients`` as an ``int`` if it is a positive integer.

    Raises
    ------
    PartitionError
        Otherwise.
    """
    if isinstance(n_clients, bool) or not isinstance(n_clients, int | np.integer) or n_clients < 1:
        raise PartitionError(f"n_clients must be a positive integer, got {n_clients!r}")
    return int(n_clients)


def client_names(n_clients: int, names: Sequence[str] | None = None) -> list[str]:
    """``names`` checked (one unique name per client) or ``client-1 .. client-K``.

    Raises
    ------
    PartitionError
        If the number of names differs from ``n_clients`` or names repeat.
    """
    if names is None:
        return [f"client-{k + 1}" for k in range(n_clients)]
    names = list(names)
    if len(names) != n_clients or len(set(names)) != len(names):
        raise PartitionError(
            f"give {n_clients} unique client names, got {len(names)} ({len(set(names))} unique)"
        )
    return names


def balanced_sizes(total: int, n_parts: int) -> list[int]:
    """``total`` split into ``n_parts`` sizes differing by at most one (larger ones first)."""
    q, r = divmod(total, n_parts)
    return [q + 1 if k < r else q for k in range(n_parts)]


def _split_sizes(
    total: int,
    n_clients: int,
    sizes: Sequence[int] | None,
    proportions: Sequence[float] | None,
    what: str,
) -> list[int]:
    """Client sizes summing to ``total``, each at least one."""
    if sizes is not None and proportions is not None:
        raise PartitionError("give either sizes or proportions, not both")
    if sizes is not None:
        out = [int(s) for s in sizes]
        if len(out) != n_clients:
            raise PartitionError(f"got {len(out)} sizes for {n_clients} clients")
        if sum(out) != total:
            raise PartitionError(
                f"sizes sum to {sum(out)} but there are {total} {what}; every one must go to "
                "exactly one client, so make the sizes sum to that number"
            )
    elif proportions is not None:
        p = np.asarray(proportions, dtype=np.float64)
        if p.shape != (n_clients,) or not np.all(np.isfinite(p)) or (p <= 0).any():
            raise PartitionError(f"give {n_clients} positive proportions, got {list(p)}")
        exact = p / p.sum() * total
        out = np.floor(exact).astype(int).tolist()
        # Largest remainder (Hamilton's method); ties go to the earlier client.
        for k in np.argsort(-(exact - np.floor(exact)), kind="stable")[: total - sum(out)]:
            out[int(k)] += 1
    else:
        if n_clients > total:
            raise PartitionError(
                f"cannot give {n_clients} clients at least one of {total} {what}; "
                "use fewer clients or more data"
            )
        out = balanced_sizes(total, n_clients)
    if min(out) < 1:
        k = int(np.argmin(out))
        raise PartitionError(
            f"client {k + 1} would get {out[k]} {what}; every client needs at least one"
        )
    return out


# ------------------------------------------------------------- horizontal
def horizontal(
    rows: pd.DataFrame,
    n_clients: int,
    *,
    seed: SeedLike,
    sizes: Sequence[int] | None = None,
    proportions: Sequence[float] | None = None,
    intervention: ArrayLike | None = None,
    supervised: Sequence[str] = (),
    names: Sequence[str] | None = None,
    min_per_client: int = 1,
) -> ClientsOnDemand:
    """Split rows IID over clients: a random permutation cut into consecutive blocks.

    The split is drawn at once; each client's :class:`ClientData` is built when it is
    first read (:class:`~fedstruct.data.client.ClientsOnDemand`).

    Parameters
    ----------
    rows
        The data; clients keep the original index labels, in the original order.
    n_clients
        Number of clients.
    seed
        Seed of the permutation.
    sizes, proportions
        Unequal splits: exact sizes summing to ``len(rows)``, or positive proportions
        rounded by the largest-remainder method. Default: sizes differing by at most one.
    intervention
        Optional per-row intervention codes (see :class:`ClientData`), split with the rows.
    supervised
        Columns every client supervises.
    names
        Client names (default ``client-1 ..``).
    min_per_client
        The fewest rows a client may get; a split that gives one client fewer is an
        error (the sizes are fixed by the rows and clients, so no redraw can help).

    Raises
    ------
    PartitionError
        If sizes do not sum to the number of rows, a client would get no row or fewer
        than ``min_per_client``, or the client count or names are invalid.
    """
    k = check_n_clients(n_clients)
    names = client_names(k, names)
    if not isinstance(rows, pd.DataFrame):
        raise PartitionError("rows must be a pandas DataFrame")
    n = len(rows)
    codes = None if intervention is None else np.asarray(intervention)
    if codes is not None and codes.shape != (n,):
        raise PartitionError(f"intervention must have one code per row ({n}), got {codes.shape}")
    if isinstance(min_per_client, bool) or not isinstance(min_per_client, int | np.integer):
        raise PartitionError(f"min_per_client must be an integer, got {min_per_client!r}")
    split_sizes = _split_sizes(n, k, sizes, proportions, "rows")
    smallest = int(np.argmin(split_sizes))
    if split_sizes[smallest] < min_per_client:
        raise PartitionError(
            f"client {names[smallest]!r} would get {split_sizes[smallest]} of the {n} rows, "
            f"fewer than min_per_client={min_per_client}; give more rows, fewer clients, or "
            "a lower min_per_client"
        )
    cuts = np.cumsum(split_sizes)[:-1]
    parts = [np.sort(part) for part in np.split(make_rng(seed).permutation(n), cuts)]

    def build(c: int) -> ClientData:
        idx = parts[c]
        return ClientData(
            names[c],
            rows.iloc[idx],
            supervised=tuple(supervised),
            intervention=None if codes is None else codes[idx],
        )

    return ClientsOnDemand(names, build)


# --------------------------------------------------------------- label skew
#: How :func:`label_skew` applies the Dirichlet: per class over clients, or per client.
LABEL_SKEW_SCHEMES = ("class", "client")


@dataclass(frozen=True)
class LabelSkewSplit:
    """A long-tail + Dirichlet label split.

    Attributes
    ----------
    classes
        The distinct labels, sorted; class ``c`` is ``classes[c]``.
    class_counts
        ``n_c`` kept per class.
    kept
        Sorted indices (into ``labels``) kept by the long-tail subsampling.
    clients
        Sorted indices per client; together exactly ``kept``, pairwise disjoint.
    attempts
        Dirichlet draws needed to meet ``min_per_client``.
    """

    classes: NDArray[Any]
    class_counts: NDArray[np.int64]
    kept: NDArray[np.int64]
    clients: tuple[NDArray[np.int64], ...]
    attempts: int

    def client_class_counts(self, labels: ArrayLike) -> NDArray[np.int64]:
        """``(n_clients, n_classes)`` counts of each class per client."""
        y = np.asarray(labels)
        return np.array(
            [[int(np.sum(y[idx] == c)) for c in self.classes] for idx in self.clients],
            dtype=np.int64,
        )


def long_tail_counts(n_max: int, n_classes: int, imbalance_factor: float) -> list[int]:
    """``n_c = ⌊n_max · r^(c/(C-1))⌋``, ``r = 1/imbalance_factor``, for ``c = 0..C-1``.

    The exponential profile of Cao et al. (2019), *Learning imbalanced datasets with
    label-distribution-aware margin loss* (CIFAR-10-LT). A ``1e-9`` guard keeps values
    that are integers in exact arithmetic from rounding down.
    """
    if n_classes == 1:
        return [int(n_max)]
    return [
        math.floor(n_max * imbalance_factor ** (-c / (n_classes - 1)) + 1e-9)
        for c in range(n_classes)
    ]


def label_skew(
    labels: ArrayLike,
    n_clients: int,
    *,
    alpha: float,
    seed: SeedLike,
    imbalance_factor: float | None = None,
    min_per_client: int = 10,
    n_max: int | None = None,
    max_attempts: int = 1000,
    scheme: str = "class",
) -> LabelSkewSplit:
    """Long-tail class sizes, then a Dirichlet(α) label split over clients.

    1. Long tail (Cao et al. 2019), only if ``imbalance_factor`` is given: class ``c``
       (sorted labels) keeps ``n_c = ⌊n_max · r^(c/(C-1))⌋`` random samples,
       ``r = 1/imbalance_factor``; ``n_max`` defaults to the smallest class size, so
       every class can supply its quota (``imbalance_factor = 1`` therefore balances
       the classes at ``n_max``). With ``imbalance_factor=None`` (default) every sample
       is kept.
    2. Dirichlet split, by ``scheme``:

       * ``"class"`` (Yurochkin et al. 2019; NIID-Bench): for each class, proportions
         ``p ~ Dir(α·1_K)`` over the clients; the class's shuffled samples are cut at
         ``⌊cumsum(p)·n_c⌋``. Client sizes vary; the whole draw is repeated until every
         client holds at least ``min_per_client`` samples, at most ``max_attempts``
         times. With many clients and a small α most draws leave a client empty
         (``Dir(0.1)`` over 100 clients gives each class to ~10 of them).
       * ``"client"`` (Hsu, Qi & Brown 2019, §3): every client holds an even share
         ``N/K`` (±1) of the kept samples, drawn class by class from its own
         proportions ``q_k ~ Dir(α·p)``, ``p`` the kept class frequencies; a class
         whose samples are used up is dropped from ``q_k`` and the rest renormalised
         (clients are filled in a random order). No client is ever empty.

    Returns
    -------
    LabelSkewSplit
        Kept indices and per-client index arrays (into ``labels``).

    Raises
    ------
    PartitionError
        If ``alpha`` or ``imbalance_factor`` are out of range, a class has fewer samples
        than its quota or a quota is 0, or no draw meets ``min_per_client``.
    """
    k = check_n_clients(n_clients)
    y = np.asarray(labels)
    if y.ndim != 1 or y.size == 0:
        raise PartitionError(f"labels must be a non-empty 1-D array, got shape {y.shape}")
    if not alpha > 0:
        raise PartitionError(f"alpha must be positive, got {alpha}")
    if imbalance_factor is not None and not imbalance_factor >= 1:
        raise PartitionError(f"imbalance_factor must be >= 1, got {imbalance_factor}")
    if imbalance_factor is None and n_max is not None:
        raise PartitionError("n_max applies to the long tail; give imbalance_factor too")
    if min_per_client < 0:
        raise PartitionError(f"min_per_client must be >= 0, got {min_per_client}")
    classes, inverse, available = np.unique(y, return_inverse=True, return_counts=True)
    if imbalance_factor is None:
        counts = [int(a) for a in available]
    else:
        top = int(available.min()) if n_max is None else int(n_max)
        counts = long_tail_counts(top, len(classes), float(imbalance_factor))
    for c, (want, have) in enumerate(zip(counts, available, strict=True)):
        if want > have or want < 1:
            raise PartitionError(
                f"class {classes[c].item()!r} would keep {want} samples but has {have}; "
                "choose n_max so that 1 <= n_c <= the class size for every class"
            )
    rng = make_rng(seed)
    per_class = [
        np.sort(rng.permutation(np.flatnonzero(inverse == c))[:want])
        for c, want in enumerate(counts)
    ]
    kept = np.sort(np.concatenate(per_class)).astype(np.int64)
    if kept.size < k * min_per_client:
        raise PartitionError(
            f"{kept.size} kept samples cannot give {k} clients {min_per_client} each; "
            "lower min_per_client or use fewer clients"
        )
    if scheme not in LABEL_SKEW_SCHEMES:
        raise PartitionError(unknown_choice_message("scheme", scheme, LABEL_SKEW_SCHEMES))
    split = _per_client if scheme == "client" else _per_class
    for attempt in range(1, (1 if scheme == "client" else max_attempts) + 1):
        clients = split(per_class, k, float(alpha), rng)
        if min(c.size for c in clients) >= min_per_client:
            return LabelSkewSplit(
                classes=classes,
                class_counts=np.array(counts, dtype=np.int64),
                kept=kept,
                clients=clients,
                attempts=attempt,
            )
    raise PartitionError(
        f"no Dirichlet(alpha={alpha}) split in {max_attempts} draws gave each of {k} clients "
        f"at least {min_per_client} samples; raise alpha, lower min_per_client, use fewer "
        "clients or raise max_attempts"
    )


def _per_class(
    per_class: list[NDArray[np.int64]], k: int, alpha: float, rng: np.random.Generator
) -> tuple[NDArray[np.int64], ...]:
    """Each class cut over the clients by ``Dir(α·1_K)`` (scheme ``"class"``)."""
    buckets: list[list[NDArray[np.int64]]] = [[] for _ in range(k)]
    for idx in per_class:
        p = rng.dirichlet(np.full(k, alpha))
        cuts = (np.cumsum(p) * idx.size).astype(np.int64)[:-1]
        for c, part in enumerate(np.split(rng.permutation(idx), cuts)):
            buckets[c].append(part)
    return tuple(np.sort(np.concatenate(b)).astype(np.int64) for b in buckets)


def _per_client(
    per_class: list[NDArray[np.int64]], k: int, alpha: float, rng: np.random.Generator
) -> tuple[NDArray[np.int64], ...]:
    """Even client sizes, each filled from its own ``Dir(α·p)`` class mix (scheme
    ``"client"``)."""
    pools = [list(rng.permutation(idx)) for idx in per_class]
    left = np.array([len(p) for p in pools], dtype=np.float64)
    prior = left / left.sum()
    sizes = balanced_sizes(int(left.sum()), k)
    clients: list[NDArray[np.int64]] = [np.empty(0, dtype=np.int64)] * k
    for client in rng.permutation(k):
        q = rng.dirichlet(alpha * prior + 1e-12)
        taken: list[int] = []
        need = sizes[client]
        while need:
            w = q * (left > 0)
            w = w / w.sum() if w.sum() > 0 else (left > 0) / (left > 0).sum()
            draw = np.minimum(rng.multinomial(need, w), left.astype(np.int64))
            for c in np.flatnonzero(draw):
                n = int(draw[c])
                taken += pools[c][:n]
                del pools[c][:n]
                left[c] -= n
                need -= n
        clients[client] = np.sort(np.asarray(taken, dtype=np.int64))
    return tuple(clients)
