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
from fedstruct.data.sites import LEVELLED, FederationSchema
from fedstruct.errors import ConfigError, DataError, UnknownVariableError
from fedstruct.experiments.fedavg.settings import FedAvgRun, task_variable
from fedstruct.experiments.source import SiteFiles, Source

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


class SiteTask(Source):
    """A user's site files, every column categorical or ordinal (FedAvg's classifier
    one-hot codes them), and the column to predict (``target``: the setting, else the
    manifest's)."""

    def __init__(self, settings: FedAvgRun, sites: SiteFiles):
        self.settings = settings
        self.sites = sites
        self.names = sites.names

    def clients(self) -> Sequence[ClientData]:
        """Every site's rows read here (a deployed node: its own; its server: none)."""
        return self.sites.clients()

    @cached_property
    def target(self) -> str:
        """The column to predict.

        Raises
        ------
        ConfigError
            If no target is named.
        UnknownVariableError
            If the target is not a column of the sites.
        DataError
            If a column is continuous.
        """
        schema = self.sites.schema
        target = self.sites.role(self.settings.target, "target")
        if not target:
            raise ConfigError("name the column to predict: --set target=COLUMN")
        if target not in schema.variables:
            raise UnknownVariableError(
                f"target {target!r} is not a column of the sites; their columns are "
                f"{list(schema.variables)}"
            )
        _require_levelled(schema)
        return target

    @property
    def cardinalities(self) -> dict[str, int]:
        """Every column's number of levels."""
        return self.sites.schema.cardinalities()


def _require_levelled(schema: FederationSchema) -> None:
    """Every column of the sites has levels (categorical or ordinal).

    Raises
    ------
    DataError
        Naming every continuous column at once, with what the user can do.
    """
    continuous = [v for v in schema.variables if schema.kinds[v] not in LEVELLED]
    if continuous:
        more = " ..." if len(continuous) > 10 else ""
        shown = ", ".join(repr(v) for v in continuous[:10]) + more
        raise DataError(
            f"FedAvg's classifier takes categorical or ordinal columns, but {len(continuous)} "
            f"of the sites' columns are continuous: {shown}; bin them into levels in the "
            "files (e.g. age groups), leave them out, or use a method that takes continuous "
            "columns (fedngm; fedcdnv with --set ci_test=fisherz). If a column's numbers are "
            "codes of a few levels, say so with --set kinds.COLUMN=ordinal"
        )
