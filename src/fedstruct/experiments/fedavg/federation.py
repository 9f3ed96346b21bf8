"""FedAvg's federation: rows sampled from a network, split IID or label-skewed."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fedstruct.data import ClientData, ClientsOnDemand, load_network
from fedstruct.data.partition import client_names, horizontal, label_skew
from fedstruct.experiments.fedavg.settings import FedAvgRun, task_variable
from fedstruct.experiments.sites import site_federation

__all__ = ["federation"]


def federation(settings: FedAvgRun) -> Sequence[ClientData]:
    """Sample the training rows and split them over ``client-1 .. client-K``, or read
    the sites' files (every column categorical: FedAvg's classifier one-hot codes them)."""
    if settings.from_files:
        return site_federation(settings).clients
    network = load_network(settings.network)
    target = task_variable(settings, network)
    rows = network.sample(settings.samples, seed=settings.seed)
    if settings.partition == "iid":
        return horizontal(
            rows, settings.clients, seed=settings.seed, min_per_client=settings.min_per_client
        )
    # partition = "label-skew" (the settings accept no other)
    split = label_skew(
        rows[target].to_numpy(),
        settings.clients,
        alpha=settings.skew_alpha,
        min_per_client=settings.min_per_client,
        seed=settings.seed,
    )
    names = client_names(settings.clients)
    return ClientsOnDemand(
        names,
        lambda k: ClientData(names[k], rows.iloc[np.sort(split.clients[k])].reset_index(drop=True)),
    )
