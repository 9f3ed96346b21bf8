"""What a run with ``--bootstrap`` adds to metrics.json (docs/confidence.md).

The fitted estimator holds the frequencies and the consensus
(:class:`~fedstruct.estimators.GraphLearner`); this module turns them into flat
metrics: how many resampled runs, how sure the learned graph's edges are, the
consensus's size (and, with a truth, its scores and the precision of the confident
edges), and how many adjacencies each site's own graph contradicts in the consensus.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from numpy.typing import NDArray

from fedstruct.graphs import Graph, graph_metrics
from fedstruct.graphs.frequencies import EdgeFrequencies, site_contradictions
from fedstruct.runs.sites import aligned

__all__ = ["CONFIDENT", "bootstrap_metrics", "confident_precision"]

#: The adjacency frequency from which metrics call an edge confident.
CONFIDENT = 0.8


def confident_precision(
    frequencies: EdgeFrequencies,
    truth: Graph,
    threshold: float = CONFIDENT,
    among: NDArray[np.bool_] | None = None,
) -> tuple[float, int]:
    """The share of the pairs adjacent in at least ``threshold`` of the runs that are
    adjacent in ``truth`` (``nan`` if there are none), and how many such pairs; with
    ``among`` (a boolean matrix over ``frequencies.names``), of those pairs only.

    Pairs over a variable the truth lacks count as wrong (``truth`` is expanded)."""
    names = [*frequencies.names, *(v for v in truth.names if v not in frequencies.names)]
    true = truth.expand(names).restrict(frequencies.names).adjacency()
    sure = np.triu(frequencies.adjacency_matrix() >= threshold - 1e-9, 1)
    if among is not None:
        sure &= among
    count = int(sure.sum())
    return (float(true[sure].mean()) if count else float("nan")), count


def bootstrap_metrics(
    graph: Graph,
    frequencies: EdgeFrequencies | None,
    consensus: Graph | None,
    local: Mapping[str, Graph],
    truth: Graph | None = None,
) -> dict[str, float]:
    """The bootstrap's metrics (none if ``frequencies`` is ``None``: no bootstrap ran).

    ``bootstrap_replicates``; ``bootstrap_mean_frequency`` (mean adjacency frequency
    of the learned ``graph``'s edges); ``confident_edges`` (pairs adjacent in at
    least :data:`CONFIDENT` of the runs) and, of them, ``confident_not_in_graph``
    (those the learned graph lacks); ``consensus_edges``;
    ``consensus_contradictions_<site>`` (pairs of the site's variables adjacent in
    one of its ``local`` graph and the consensus, not both); with ``truth``,
    ``confident_precision`` (also apart, where there are some:
    ``confident_precision_in_graph``, ``confident_precision_not_in_graph``) and the
    consensus's graph metrics (``consensus_*``).
    """
    if frequencies is None or consensus is None:
        return {}
    adjacency = frequencies.adjacency_matrix()
    on_edges = [adjacency[graph.index(e.a), graph.index(e.b)] for e in graph.edges()]
    confident = np.triu(adjacency >= CONFIDENT - 1e-9, 1)
    in_graph = _in_graph(frequencies, graph)
    metrics = {
        "bootstrap_replicates": float(frequencies.replicates),
        "bootstrap_mean_frequency": float(np.mean(on_edges)) if on_edges else 1.0,
        "confident_edges": float(confident.sum()),
        "confident_not_in_graph": float((confident & ~in_graph).sum()),
        "consensus_edges": float(consensus.n_edges),
    }
    for site, site_graph in local.items():
        metrics[f"consensus_contradictions_{site}"] = float(
            site_contradictions(consensus, site_graph)
        )
    if truth is not None:
        precision, count = confident_precision(frequencies, truth)
        if count:
            metrics["confident_precision"] = precision
        for name, among in (("in_graph", in_graph), ("not_in_graph", ~in_graph)):
            precision, count = confident_precision(frequencies, truth, among=among)
            if count:
                metrics[f"confident_precision_{name}"] = precision
        scores = graph_metrics(*aligned(truth, consensus))
        metrics.update({f"consensus_{k}": float(v) for k, v in scores.items()})
    return metrics


def _in_graph(frequencies: EdgeFrequencies, graph: Graph) -> NDArray[np.bool_]:
    """Which pairs of ``frequencies.names`` the learned ``graph`` has adjacent."""
    names = [*frequencies.names, *(v for v in graph.names if v not in frequencies.names)]
    return graph.expand(names).restrict(frequencies.names).adjacency()
