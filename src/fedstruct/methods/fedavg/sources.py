"""FedAvg's data: rows sampled from a network, split IID or label-skewed; or a user's
site files, with the column to predict."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

import numpy as np
import pandas as pd

from fedstruct.data import ClientData, ClientsOnDemand, load_network
from fedstruct.data.discrete import DiscreteNetwork
from fedstruct.data.partition import client_names, horizontal, label_skew
from fedstruct.methods.fedavg.settings import FedAvgRun, task_variable
from fedstruct.runs.source import SiteFiles, Source, TableTask

__all__ = ["NetworkTask", "SiteTask", "source"]


def source(settings: FedAvgRun, sites: SiteFiles | None) -> NetworkTask | SiteTask:
    """The run's data: the user's ``sites``, else rows sampled from the network."""
    return NetworkTask(settings) if sites is None else SiteTask(settings, sites)


class NetworkTask(Source):
    """Training rows sampled from ``settings.network`` and split over
    ``client-1 .. client-K`` (IID or label-skewed), and the server's test rows."""

    def __init__(self, settings: FedAvgRun):
        self.settings = settings
        self.names = tuple(client_names(settings.clients))

    @cached_property
    def network(self) -> DiscreteNetwork:
        """The bundled network the rows are sampled from."""
        return load_network(self.settings.network)

    @cached_property
    def target(self) -> str:
        """The variable to predict (the setting, else the network's task)."""
        return task_variable(self.settings, self.network)

    @property
    def cardinalities(self) -> dict[str, int]:
        """Every variable's number of levels."""
        return self.network.cardinalities

    #: A network's variables are all categorical, its rows complete.
    continuous: tuple[str, ...] = ()
    missing_values = False

    def clients(self) -> Sequence[ClientData]:
        """The training rows split over the clients (built when read)."""
        s = self.settings
        rows = self.network.sample(s.samples, seed=s.seed)
        if s.partition == "iid":
            return horizontal(rows, s.clients, seed=s.seed, min_per_client=s.min_per_client)
        # partition = "label-skew" (the settings accept no other)
        split = label_skew(
            rows[self.target].to_numpy(),
            s.clients,
            alpha=s.skew_alpha,
            min_per_client=s.min_per_client,
            seed=s.seed,
        )
        names = list(self.names)
        return ClientsOnDemand(
            names,
            lambda k: ClientData(
                names[k], rows.iloc[np.sort(split.clients[k])].reset_index(drop=True)
            ),
        )

    def test_rows(self) -> pd.DataFrame:
        """The server's test set, sampled apart from the clients' rows."""
        return self.network.sample(self.settings.test_samples, seed=self.settings.seed + 10_000)


class SiteTask(TableTask):
    """A user's site files and the column to predict (``target``: the setting, else
    the manifest's): categorical and ordinal columns one-hot, continuous ones
    standardised with federated statistics, missing values (kept by default:
    ``missing=keep``) imputed; a continuous target is a regression. A feature a site
    does not observe (its file lacks it, or misses it at every row) is missing at
    every row there: imputed from the other sites' statistics, its missing indicator
    on (:attr:`unobserved`)."""

    @cached_property
    def target(self) -> str:
        """The column to predict (:meth:`~fedstruct.runs.source.TableTask.checked_target`;
        a continuous one is a regression)."""
        return self.checked_target("FedAvg", regression=True)
