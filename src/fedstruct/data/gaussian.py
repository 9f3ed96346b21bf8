"""Linear-Gaussian Bayesian networks with known graphs, read offline from pgmpy's wheel.

The bnlearn repository's Gaussian networks (Scutari 2010) ship in pgmpy 1.0's wheel as
JSON (``nodes``, ``arcs``, and per node the intercept, the coefficients on its parents
and the residual variance): ``ecoli70`` (46 genes of *E. coli*, Schäfer & Strimmer
2005), ``magic-niab`` (44 wheat traits, Scutari et al. 2014), ``magic-irri`` (64 rice
traits) and ``arth150`` (107 genes of *A. thaliana*, Opgen-Rhein & Strimmer 2007). A
variable is its parents' linear combination plus Gaussian noise,
``X_v = b_v + Σ_p w_vp X_p + ε_v``, ``ε_v ~ N(0, σ²_v)``; :meth:`GaussianNetwork.sample`
draws rows in a topological order. The true DAG is :attr:`GaussianNetwork.graph`:
continuous data for Fisher-z and the mixed-data tests with a known answer.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache

import numpy as np
import pandas as pd

from fedstruct.data._shared import SeedLike, check_sample_size, make_rng
from fedstruct.data.bif import pgmpy_example_file
from fedstruct.errors import DataError, UnknownNetworkError, unknown_choice_message
from fedstruct.graphs import Graph

__all__ = ["GAUSSIAN_NETWORKS", "GaussianNetwork", "load_gaussian_network"]

#: The Gaussian networks pgmpy 1.0's wheel carries, with a line on each.
GAUSSIAN_NETWORKS: dict[str, str] = {
    "ecoli70": "46 E. coli genes, 70 arcs (Schäfer & Strimmer 2005)",
    "magic-niab": "44 wheat traits, 66 arcs (Scutari et al. 2014)",
    "magic-irri": "64 rice traits, 102 arcs (Scutari et al. 2014)",
    "arth150": "107 A. thaliana genes, 150 arcs (Opgen-Rhein & Strimmer 2007)",
}


@dataclass(frozen=True)
class GaussianNetwork:
    """A linear-Gaussian Bayesian network (module docstring).

    Attributes
    ----------
    name
        Its name.
    graph
        The DAG.
    intercepts, variances
        Per variable (in :attr:`names` order), ``b_v`` and ``σ²_v``.
    weights
        ``(d, d)``: ``weights[v, p]`` is ``w_vp``, the coefficient of parent ``p`` in
        ``X_v`` (zero where ``p`` is not a parent).
    """

    name: str
    graph: Graph
    intercepts: np.ndarray
    variances: np.ndarray
    weights: np.ndarray

    @property
    def names(self) -> tuple[str, ...]:
        """The variables."""
        return self.graph.names

    def sample(self, n: int, *, seed: SeedLike) -> pd.DataFrame:
        """``n`` rows drawn from the network, one ``float64`` column per variable.

        Raises
        ------
        SampleSizeError
            If ``n`` is not a positive integer.
        """
        check_sample_size(n)
        rng = make_rng(seed)
        names = self.names
        noise = rng.standard_normal((n, len(names))) * np.sqrt(self.variances)
        values = np.zeros((n, len(names)))
        index = {v: k for k, v in enumerate(names)}
        for name in self.graph.topological_order():
            v = index[name]
            values[:, v] = self.intercepts[v] + values @ self.weights[v] + noise[:, v]
        return pd.DataFrame(values, columns=list(names))


@cache
def load_gaussian_network(name: str) -> GaussianNetwork:
    """The Gaussian network ``name`` (:data:`GAUSSIAN_NETWORKS`), read from pgmpy's wheel.

    Raises
    ------
    UnknownNetworkError
        For a name not in :data:`GAUSSIAN_NETWORKS`.
    DataError
        If pgmpy's wheel lacks the file or the file is not a linear-Gaussian network.
    """
    if name not in GAUSSIAN_NETWORKS:
        raise UnknownNetworkError(
            unknown_choice_message("Gaussian network", name, GAUSSIAN_NETWORKS, suggest=True)
        )
    path = pgmpy_example_file(f"{name}.json")
    document = json.loads(path.read_text())
    names = [str(v) for v in document["nodes"]]
    index = {v: k for k, v in enumerate(names)}
    d = len(names)
    edges = [(str(a), str(b)) for a, b in document["arcs"]]
    graph = Graph.from_edges(names, edges)
    intercepts, variances, weights = np.zeros(d), np.ones(d), np.zeros((d, d))
    for node, cpd in document["cpds"].items():
        v = index[node]
        coefficients = cpd["coefficients"]
        intercepts[v] = float(coefficients.get("(Intercept)", [0.0])[0])
        variances[v] = float(cpd["variance"][0])
        for parent in cpd["parents"]:
            weights[v, index[parent]] = float(coefficients[parent][0])
        if not (math.isfinite(variances[v]) and variances[v] > 0):
            raise DataError(f"{path}: node {node!r} has no positive variance")
    return GaussianNetwork(name, graph, intercepts, variances, weights)
