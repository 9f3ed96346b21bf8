"""A graph learner's bootstrap: its four parameters, checked, and the run of its
``B`` site-resampled replicates after a fit (docs/confidence.md).

The replicates themselves run in :mod:`fedstruct.fl.bootstrap` (each a fresh
estimator of the same class and parameters, without a bootstrap of its own, on a
backend whose sites resample their own rows); this module says which parameters
they get and counts the graphs they return
(:class:`~fedstruct.graphs.frequencies.EdgeFrequencies`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fedstruct.data.client import ClientData
from fedstruct.errors import ConfigError
from fedstruct.fl.bootstrap import MAX_REPLICATES, replicate_graphs
from fedstruct.graphs.frequencies import EdgeFrequencies

__all__ = ["BOOTSTRAP_PARAMETERS", "check_bootstrap", "replicate_frequencies"]

#: A graph learner's bootstrap parameters and their values in a replicate (which runs
#: no bootstrap of its own).
BOOTSTRAP_PARAMETERS: dict[str, Any] = {
    "bootstrap": None,
    "subsample": None,
    "correct_duplicates": True,
    "jobs": None,
}


def check_bootstrap(
    method: str,
    bootstrap: Any,
    subsample: Any,
    correct_duplicates: Any,
    jobs: Any,
) -> None:
    """Check a graph learner's bootstrap parameters.

    Raises
    ------
    ConfigError
        One line naming the parameter, what it must be and what it got.
    """
    if not isinstance(correct_duplicates, bool | np.bool_):
        raise ConfigError(
            f"{method} correct_duplicates = {correct_duplicates!r}: give true (a "
            "bootstrap sample's rows count half a row each in the CI tests) or false"
        )
    if subsample is not None and not (isinstance(subsample, float) and 0 < subsample < 1):
        raise ConfigError(
            f"{method} subsample = {subsample!r}: give the share of each site's rows "
            "a resampled run draws, between 0 and 1 (exclusive), or None for a bootstrap"
        )
    for name, value in (("bootstrap", bootstrap), ("jobs", jobs)):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1
        ):
            raise ConfigError(f"{method} {name} = {value!r}: give a whole number >= 1, or None")
    if bootstrap is not None and bootstrap > MAX_REPLICATES:
        raise ConfigError(
            f"{method} bootstrap = {bootstrap}: each replicate runs the whole "
            f"federation again (about {bootstrap} times the fit's own time); give at "
            f"most {MAX_REPLICATES:,} (an edge's frequency has a standard error of at "
            "most 0.5/√B; docs/confidence.md)"
        )


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
    params = {**estimator.get_params(deep=False), **BOOTSTRAP_PARAMETERS}
    if estimator.inner_workers is not None and estimator.jobs != 1:
        params[estimator.inner_workers] = 1
    graphs = replicate_graphs(
        type(estimator),
        params,
        clients,
        int(estimator.bootstrap or 0),
        seed=int(estimator.seed),
        subsample=estimator.subsample,
        correct_duplicates=estimator.correct_duplicates,
        jobs=estimator.jobs,
        progress=bool(run_options.get("progress", False)),
        fit_seconds=seconds,
    )
    return EdgeFrequencies.of(graphs, estimator.graph_.names, estimator.mark_patterns)
