"""The data of ``fedstruct run fedfci``: sites sampled from a network, or the user's files.

:class:`SampledSites` draws each site's rows from one model (a bundled discrete network,
a Gaussian network or a random conditional-Gaussian model), ``n_k`` uniform in
``[min_samples, max_samples]``, every variable observed, with ``missing_rate`` of the
values missing at random; its truth is the model's DAG. On a user's files the sites are
:class:`~fedstruct.runs.source.SiteFiles`.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import pandas as pd

from fedstruct.data import ClientData, ClientsOnDemand, load_network
from fedstruct.data._shared import child_seed, make_rng
from fedstruct.data.conditional_gaussian import ConditionalGaussianSCM
from fedstruct.data.gaussian import GAUSSIAN_NETWORKS, load_gaussian_network
from fedstruct.data.partition import client_names
from fedstruct.graphs import Graph
from fedstruct.graphs.random import erdos_renyi_dag
from fedstruct.methods.fedfci.settings import MIXED, FedFCIRun
from fedstruct.runs.source import SiteFiles, Source

__all__ = ["SampledSites", "mixed_model", "source"]


def source(settings: FedFCIRun, sites: SiteFiles | None) -> SampledSites | SiteFiles:
    """The user's ``sites`` (every column, missing values kept for test-wise deletion),
    else sites sampled from the settings' network (:class:`SampledSites`)."""
    return SampledSites(settings) if sites is None else sites


def mixed_model(variables: int, seed: int) -> ConditionalGaussianSCM:
    """A random conditional-Gaussian model: an Erdős–Rényi DAG (one edge per variable
    on average), half its variables categorical (3 levels) or binary, the others
    linear-Gaussian (:class:`~fedstruct.data.conditional_gaussian.ConditionalGaussianSCM`)."""
    dag = erdos_renyi_dag(variables, seed=seed, edges_per_node=1.0)
    rng = np.random.default_rng(seed)
    chosen = set(rng.permutation(variables)[: variables // 2].tolist())
    kinds = {
        v: ("real" if i not in chosen else "categorical" if i % 2 else "binary")
        for i, v in enumerate(dag.names)
    }
    return ConditionalGaussianSCM(dag, kinds, seed=seed)


class SampledSites(Source):
    """Sites whose rows are drawn from one model (module docstring).

    Parameters
    ----------
    settings
        The run's settings (``network``, ``clients``, sample sizes, ``missing_rate``,
        ``seed``).
    """

    def __init__(self, settings: FedFCIRun) -> None:
        self.settings = settings
        self.names = tuple(client_names(settings.clients))

    @cached_property
    def _model(self) -> tuple[object, Graph]:
        s = self.settings
        if s.network == MIXED:
            model = mixed_model(s.variables, s.seed)
            return model, model.dag
        if s.network in GAUSSIAN_NETWORKS:
            network = load_gaussian_network(s.network)
            return network, network.graph
        discrete = load_network(s.network)
        return discrete, discrete.graph

    @property
    def dag(self) -> Graph:
        """The model's DAG: the truth a learned graph is scored against."""
        return self._model[1]

    def levels(self) -> dict[str, int] | None:
        """The discrete variables' numbers of levels, public (the model's states; a DP
        run reads them); ``None`` for a Gaussian network."""
        model = self._model[0]
        cards = getattr(model, "cardinalities", None)
        return None if cards is None else {v: int(c) for v, c in dict(cards).items()}

    @property
    def truth(self) -> Graph:
        """The model's DAG."""
        return self.dag

    def sample(self, n: int, seed: int) -> pd.DataFrame:
        """``n`` rows of the model, in the DAG's column order."""
        drawn = self._model[0].sample(n, seed=seed)  # type: ignore[attr-defined]
        rows = drawn.frame if hasattr(drawn, "frame") else drawn
        return rows.loc[:, list(self.dag.names)].reset_index(drop=True)

    @cached_property
    def _clients(self) -> ClientsOnDemand:
        s = self.settings
        sizes = make_rng(child_seed(s.seed, 0)).integers(
            s.min_samples, s.max_samples + 1, size=len(self.names)
        )

        def draw(k: int) -> ClientData:
            rows = self.sample(int(sizes[k]), child_seed(s.seed, 1, k))
            if s.missing_rate:
                rows = with_holes(rows, s.missing_rate, child_seed(s.seed, 2, k))
            return ClientData(self.names[k], rows, missing_values=bool(s.missing_rate))

        return ClientsOnDemand(self.names, draw)

    def clients(self) -> ClientsOnDemand:
        """Every site's rows, each drawn when first read (and kept)."""
        return self._clients


def with_holes(rows: pd.DataFrame, share: float, seed: int) -> pd.DataFrame:
    """``rows`` with ``share`` of each column's values missing at random (NaN in a float
    column, the code ``-1`` in an integer one)."""
    rng = make_rng(seed)
    out = rows.copy()
    for column in out.columns:
        hole = rng.random(len(out)) < share
        out.loc[hole, column] = np.nan if out[column].dtype.kind == "f" else -1
    return out
