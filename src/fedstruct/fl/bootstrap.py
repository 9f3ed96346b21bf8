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

import math
import multiprocessing as mp
import sys
import zlib
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

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


def site_rng_seed(seed: int, replicate: int, site: str) -> list[int]:
    """The seed of site ``site``'s draw in replicate ``replicate`` of a run seeded
    ``seed``: from these three only (the site's name by its CRC-32), so a node can draw
    its own sample knowing nothing of the others."""
    return child_seed(seed, BOOTSTRAP_STREAM, replicate, zlib.crc32(site.encode()))


class ResampledSites(LocalBackend):
    """The local backend where every site's client holds a resample of the site's own
    rows (replicate ``replicate`` of a run seeded ``seed``): a bootstrap sample, or
    with ``subsample`` that share of its rows drawn without replacement."""

    def __init__(
        self,
        replicate: int,
        seed: int,
        subsample: float | None = None,
        correct_duplicates: bool = True,
    ) -> None:
        self.replicate = int(replicate)
        self.seed = int(seed)
        self.subsample = subsample
        self.correct_duplicates = correct_duplicates

    def site_data(self, data: ClientData) -> ClientData:
        """What site ``data.name`` holds in this replicate: its own rows, resampled
        (:meth:`~fedstruct.data.ClientData.resampled`: a bootstrap sample's rows count
        half a row each in the CI tests unless ``correct_duplicates`` is false)."""
        rng = make_rng(site_rng_seed(self.seed, self.replicate, data.name))
        return data.resampled(rng, self.subsample, correct_duplicates=self.correct_duplicates)


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
    replicates: int,
    *,
    seed: int,
    subsample: float | None = None,
    correct_duplicates: bool = True,
    jobs: int | None = None,
    progress: bool = False,
    start: str | None = None,
    fit_seconds: float | None = None,
) -> list[Graph]:
    """The graph each of ``replicates`` site-resampled federations learns, in
    replicate order.

    Parameters
    ----------
    estimator, params
        The estimator class and its parameters (without a bootstrap of its own).
    clients
        The sites' data.
    replicates
        ``B``.
    seed
        The run's seed (each site's draw: :func:`site_rng_seed`).
    subsample
        The share of its rows each site draws without replacement; ``None``: a
        bootstrap sample (as many rows, with replacement).
    correct_duplicates
        A bootstrap sample's rows count half a row each in the CI tests
        (:meth:`~fedstruct.data.ClientData.resampled`); false: the plain bootstrap.
    jobs
        Processes; ``None``: the cores this process may use, at most ``B``. With 1
        every replicate runs in this process. The graphs are the same for every value.
    progress
        Show the replicates done.
    start
        How worker processes start (``"fork"``, ``"spawn"``); default: forked, or
        spawned once torch is loaded (its thread pools do not survive a fork).
    fit_seconds
        How long the fit on the sites' own rows took: the progress then says what the
        replicates will take, ``B / jobs`` such fits (:func:`cost_estimate`).
    """
    jobs = min(usable_cores() if jobs is None else int(jobs), replicates)
    label = f"{getattr(estimator, 'method', 'bootstrap')} bootstrap"
    if fit_seconds is not None:
        label += f" ({cost_estimate(fit_seconds, replicates, jobs)})"
    resample = (subsample, correct_duplicates)
    graphs: list[Graph] = []
    with show_progress(label, replicates, enabled=progress, unit="replicate") as bar:
        if jobs <= 1:
            for r in range(replicates):
                graphs.append(_fit_replicate(estimator, params, clients, r, seed, resample))
                bar.advance()
            return graphs
        # Forked workers share the data at no cost; torch's thread pools do not survive
        # a fork, so once torch is loaded (FED-CD) the workers are spawned instead.
        context = mp.get_context(start or ("spawn" if "torch" in sys.modules else "fork"))
        with ProcessPoolExecutor(
            jobs,
            mp_context=context,
            initializer=_hold,
            initargs=(estimator, params, clients, seed, resample),
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
    resample: tuple[float | None, bool],
) -> Graph:
    """Replicate ``replicate``: a fresh estimator fitted on :class:`ResampledSites`
    (``resample``: its ``subsample`` and ``correct_duplicates``)."""
    model = estimator(**params)
    model.fit(list(clients), backend=ResampledSites(replicate, seed, *resample))
    graph: Graph = model.graph_
    return graph


#: What a worker process fits (set once per worker by :func:`_hold`).
_HELD: list[Any] = []


def _hold(*held: Any) -> None:
    _HELD[:] = held


def _in_worker(replicate: int) -> Graph:
    estimator, params, clients, seed, resample = _HELD
    return _fit_replicate(estimator, params, clients, replicate, seed, resample)
