"""Edge confidence by resampling: a graph learner's federation run ``B`` more times,
each site drawing a bootstrap sample of its own rows (docs/confidence.md).

Replicate ``r`` runs the whole federation, unchanged, on the backend
:class:`ResampledSites`: a local backend whose every site, when its client is built,
replaces its rows by ``n`` rows drawn with replacement from its own ``n`` rows
(:meth:`~fedstruct.data.ClientData.resampled`; the rows of one intervention regime from
that regime's), each counting half a row of evidence in its CI tests (the statistic of
a bootstrap sample is about twice a χ² variable under independence; the derivation is
in ``resampled``'s docstring and docs/confidence.md). No row moves between sites: a
site's draw reads its own rows and is seeded by the run's seed, ``r`` and the site's
name alone, so the same seed gives the same replicates whatever the number of
processes. Replicates run in ``jobs`` processes
(:func:`replicate_graphs`: forked, or spawned once torch is loaded); each returns its
learned graph, and the caller counts them
(:class:`~fedstruct.graphs.frequencies.EdgeFrequencies`).

A deployment, where each SuperNode holds its own rows, would need each node to draw
its sample for ``B`` extra runs; the Flower app does not do that yet, so the bootstrap
is refused there (:func:`deployment_refusal`).
"""

from __future__ import annotations

import dataclasses
import math
import multiprocessing as mp
import sys
import zlib
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import InitVar, dataclass
from typing import Any

import numpy as np

from fedstruct.constraints import Boolean, Interval, check_fields
from fedstruct.data._shared import child_seed, make_rng
from fedstruct.data.client import ClientData
from fedstruct.errors import ConfigError
from fedstruct.fl.backend import LocalBackend
from fedstruct.fl.progress import elapsed_text, show_progress
from fedstruct.fl.threads import usable_cores
from fedstruct.graphs.graph import Graph

__all__ = [
    "BOOTSTRAP_STREAM",
    "MAX_REPLICATES",
    "BootstrapOptions",
    "ResampledSites",
    "check_clients_here",
    "cost_estimate",
    "deployment_refusal",
    "replicate_graphs",
    "site_rng_seed",
]

#: The tag of the bootstrap's random stream among the run seed's children.
BOOTSTRAP_STREAM = 0x626F6F74

#: The most replicates a bootstrap runs: each is a whole federated run, so ``B`` of
#: them take about ``B / jobs`` times the fit's time (10,000 one-second fits on two
#: cores: 1.4 h); an edge's frequency has a standard error of at most ``0.5 / √B``.
MAX_REPLICATES = 10_000


@dataclass(frozen=True)
class BootstrapOptions:
    """The bootstrap block, declared once: a run's settings (``--bootstrap``,
    ``--jobs``, ``--set subsample=...``) and a graph learner's parameters of the same
    names are this object's fields, checked here.

    Parameters
    ----------
    bootstrap
        ``B``: the replicates, each the whole federation on site-resampled rows (0 or,
        as an estimator's parameter, ``None``: no bootstrap; at most
        :data:`MAX_REPLICATES`).
    subsample
        The share of its rows each site draws without replacement in a replicate;
        ``None``: a bootstrap sample (as many rows, with replacement).
    correct_duplicates
        A bootstrap sample's rows count half a row each in the CI tests
        (:meth:`~fedstruct.data.ClientData.resampled`); false: the plain bootstrap.
        Ignored with ``subsample``.
    jobs
        Processes running the replicates; ``None``: the cores available, at most ``B``.
    owner
        Who the values belong to, the prefix of an error's field name (a method's name
        for its parameters; empty for a run's settings).

    Raises
    ------
    ConfigError
        One line naming the first field out of its range (``_CONSTRAINTS``).
    """

    bootstrap: int | None = None
    subsample: float | None = None
    correct_duplicates: bool = True
    jobs: int | None = None
    owner: InitVar[str] = ""

    def __post_init__(self, owner: str) -> None:
        if self.bootstrap is None:
            object.__setattr__(self, "bootstrap", 0)
        b = self.bootstrap
        if isinstance(b, int | np.integer) and not isinstance(b, bool) and b > MAX_REPLICATES:
            raise ConfigError(
                f"{owner + ' ' if owner else ''}bootstrap = {b}: each replicate runs the "
                f"whole federation again (about {b} times the fit's own time); give at "
                f"most {MAX_REPLICATES:,} (an edge's frequency has a standard error of at "
                "most 0.5/√B; docs/confidence.md)"
            )
        check_fields(self, _CONSTRAINTS, owner)

    @classmethod
    def of(cls, holder: Any, owner: str = "") -> BootstrapOptions:
        """The options ``holder`` (a run's settings, a graph learner) holds as
        attributes of the same names, checked."""
        names = [f.name for f in dataclasses.fields(cls)]
        return cls(**{name: getattr(holder, name) for name in names}, owner=owner)

    @property
    def replicates(self) -> int:
        """``B`` (0: no bootstrap)."""
        return int(self.bootstrap or 0)

    def params(self) -> dict[str, Any]:
        """The options as a graph learner's parameters (no bootstrap: ``bootstrap=None``,
        as ``model.json`` records it)."""
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return {**values, "bootstrap": self.replicates or None}


#: What each bootstrap option must be (:meth:`BootstrapOptions.__post_init__`).
_CONSTRAINTS = {
    "bootstrap": Interval(int, 0, MAX_REPLICATES),
    "subsample": Interval(float, 0, 1, closed="neither", allow_none=True),
    "correct_duplicates": Boolean(),
    "jobs": Interval(int, 1, allow_none=True),
}


def site_rng_seed(seed: int, replicate: int, site: str) -> list[int]:
    """The seed of site ``site``'s draw in replicate ``replicate`` of a run seeded
    ``seed``: from these three only (the site's name by its CRC-32), so a node can draw
    its own sample knowing nothing of the others."""
    return child_seed(seed, BOOTSTRAP_STREAM, replicate, zlib.crc32(site.encode()))


class ResampledSites(LocalBackend):
    """The local backend where every site's client holds a resample of the site's own
    rows (replicate ``replicate`` of a run seeded ``seed``): a bootstrap sample, or
    with ``options.subsample`` that share of its rows drawn without replacement."""

    def __init__(
        self, replicate: int, seed: int, options: BootstrapOptions = BootstrapOptions()
    ) -> None:
        self.replicate = int(replicate)
        self.seed = int(seed)
        self.options = options

    def site_data(self, data: ClientData) -> ClientData:
        """What site ``data.name`` holds in this replicate: its own rows, resampled
        (:meth:`~fedstruct.data.ClientData.resampled`: a bootstrap sample's rows count
        half a row each in the CI tests unless ``correct_duplicates`` is false)."""
        rng = make_rng(site_rng_seed(self.seed, self.replicate, data.name))
        return data.resampled(
            rng, self.options.subsample, correct_duplicates=self.options.correct_duplicates
        )


def deployment_refusal(who: str) -> ConfigError:
    """The error of a bootstrap asked for (by ``who``: the method, an option) where the
    nodes hold the rows (a deployment)."""
    return ConfigError(
        f"{who}: the bootstrap runs its replicates on this machine and needs the clients' "
        "rows here; on a deployment each SuperNode would have to resample its own rows, "
        "which the Flower app does not do yet: run with --backend local or drop --bootstrap"
    )


def check_clients_here(clients: Sequence[Any], method: str) -> list[ClientData]:
    """The clients' data, for replicates run here.

    Raises
    ------
    ConfigError
        If only the clients' names are given (:func:`deployment_refusal`).
    """
    if not all(isinstance(c, ClientData) for c in clients):
        raise deployment_refusal(method)
    return list(clients)


def replicate_graphs(
    estimator: type,
    params: dict[str, Any],
    clients: Sequence[ClientData],
    options: BootstrapOptions,
    *,
    seed: int,
    progress: bool = False,
    start: str | None = None,
    fit_seconds: float | None = None,
) -> list[Graph]:
    """The graph each of ``options.bootstrap`` site-resampled federations learns, in
    replicate order.

    Parameters
    ----------
    estimator, params
        The estimator class and its parameters (without a bootstrap of its own).
    clients
        The sites' data.
    options
        ``B`` (``bootstrap``), how each site resamples (``subsample``,
        ``correct_duplicates``) and the processes (``jobs``; ``None``: the cores this
        process may use, at most ``B``; with 1 every replicate runs in this process).
        The graphs are the same for every ``jobs``.
    seed
        The run's seed (each site's draw: :func:`site_rng_seed`).
    progress
        Show the replicates done.
    start
        How worker processes start (``"fork"``, ``"spawn"``); default: forked, or
        spawned once torch is loaded (its thread pools do not survive a fork).
    fit_seconds
        How long the fit on the sites' own rows took: the progress then says what the
        replicates will take, ``B / jobs`` such fits (:func:`cost_estimate`).
    """
    replicates = options.replicates
    jobs = min(usable_cores() if options.jobs is None else int(options.jobs), replicates)
    label = f"{getattr(estimator, 'method', 'bootstrap')} bootstrap"
    if fit_seconds is not None:
        label += f" ({cost_estimate(fit_seconds, replicates, jobs)})"
    graphs: list[Graph] = []
    with show_progress(label, replicates, enabled=progress, unit="replicate") as bar:
        if jobs <= 1:
            for r in range(replicates):
                graphs.append(_fit_replicate(estimator, params, clients, r, seed, options))
                bar.advance()
            return graphs
        # Forked workers share the data at no cost; torch's thread pools do not survive
        # a fork, so once torch is loaded (FED-CD) the workers are spawned instead.
        context = mp.get_context(start or ("spawn" if "torch" in sys.modules else "fork"))
        with ProcessPoolExecutor(
            jobs,
            mp_context=context,
            initializer=_hold,
            initargs=(estimator, params, clients, seed, options),
        ) as pool:
            for graph in pool.map(_in_worker, range(replicates)):
                graphs.append(graph)
                bar.advance()
    return graphs


def cost_estimate(fit_seconds: float, replicates: int, jobs: int) -> str:
    """What ``replicates`` replicates in ``jobs`` processes will take, at ``fit_seconds``
    each (a replicate runs the same federation on as many rows): ``about 0:12:30``."""
    seconds = fit_seconds * math.ceil(replicates / max(jobs, 1))
    return f"about {elapsed_text(seconds)} at {fit_seconds:.1f} s a replicate"


def _fit_replicate(
    estimator: type,
    params: dict[str, Any],
    clients: Sequence[ClientData],
    replicate: int,
    seed: int,
    options: BootstrapOptions,
) -> Graph:
    """Replicate ``replicate``: a fresh estimator fitted on :class:`ResampledSites`."""
    model = estimator(**params)
    model.fit(list(clients), backend=ResampledSites(replicate, seed, options))
    graph: Graph = model.graph_
    return graph


#: What a worker process fits (set once per worker by :func:`_hold`).
_HELD: list[Any] = []


def _hold(*held: Any) -> None:
    _HELD[:] = held


def _in_worker(replicate: int) -> Graph:
    estimator, params, clients, seed, options = _HELD
    return _fit_replicate(estimator, params, clients, replicate, seed, options)
