"""A graph learner's bootstrap: its four parameters (one
:class:`~fedstruct.fl.bootstrap.BootstrapOptions`, which checks them), and the run of
its ``B`` site-resampled replicates after a fit (docs/confidence.md).

The replicates themselves run in :mod:`fedstruct.fl.bootstrap` (each a fresh
estimator of the same class and parameters, without a bootstrap of its own, on a
backend whose sites resample their own rows); this module says which parameters
they get and counts the graphs they return
(:class:`~fedstruct.graphs.frequencies.EdgeFrequencies`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fedstruct.data.client import ClientData
from fedstruct.fl.bootstrap import BootstrapOptions, replicate_graphs
from fedstruct.graphs.frequencies import EdgeFrequencies

__all__ = ["BOOTSTRAP_PARAMETERS", "BootstrapOptions", "replicate_frequencies"]

#: A graph learner's bootstrap parameters and their values in a replicate (which runs
#: no bootstrap of its own): :class:`BootstrapOptions`' defaults.
BOOTSTRAP_PARAMETERS: dict[str, Any] = BootstrapOptions().params()


def replicate_frequencies(
    estimator: Any,
    clients: Sequence[ClientData],
    run_options: Mapping[str, Any],
    seconds: float,
) -> EdgeFrequencies:
    """Run the replicates of the fitted graph learner ``estimator`` and count their
    graphs over its learned graph's variables.

    Each replicate gets the estimator's parameters without a bootstrap; where the
    replicates run in parallel (``jobs`` other than 1) and the method has a parameter
    of processes inside one fit (``inner_workers``), one process each. The progress
    says what they will take (each about as long as the fit's ``seconds``).
    """
    options = estimator.bootstrap_options
    params = {**estimator.get_params(deep=False), **BOOTSTRAP_PARAMETERS}
    if estimator.inner_workers is not None and options.jobs != 1:
        params[estimator.inner_workers] = 1
    graphs = replicate_graphs(
        type(estimator),
        params,
        clients,
        options,
        seed=int(estimator.seed),
        progress=bool(run_options.get("progress", False)),
        fit_seconds=seconds,
    )
    return EdgeFrequencies.of(graphs, estimator.graph_.names, estimator.mark_patterns)
