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
from fedstruct.data.sites import LEVELLED, FederationSchema, unobserved_as_missing
from fedstruct.errors import ConfigError, DataError, UnknownVariableError
from fedstruct.experiments.fedavg.settings import FedAvgRun, task_variable
from fedstruct.experiments.source import OnSites, SiteFiles, Source

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


class SiteTask(OnSites):
    """A user's site files and the column to predict (``target``: the setting, else
    the manifest's): categorical and ordinal columns one-hot, continuous ones
    standardised with federated statistics, missing values (kept by default:
    ``missing=keep``) imputed; a continuous target is a regression. A feature a site
    does not observe (its file lacks it, or misses it at every row) is missing at
    every row there: imputed from the other sites' statistics, its missing indicator
    on (:attr:`unobserved`)."""

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
            If a categorical target has a single level at every site, or a site does
            not observe the target.
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
        _check_every_site_observes(schema, target)
        levels = schema.levels.get(target)
        if levels is not None and len(levels) < 2:
            raise DataError(
                f"target {target!r} has the single level {levels[0]!r} at every site; a "
                "classifier needs two or more: pick another target, or set "
                f"kinds.{target}=continuous if its values are numbers to regress on"
            )
        return target

    @property
    def cardinalities(self) -> dict[str, int]:
        """Every categorical or ordinal column's number of levels."""
        return self.sites.schema.cardinalities()

    @property
    def continuous(self) -> tuple[str, ...]:
        """The continuous columns, in the schema's order."""
        schema = self.sites.schema
        return tuple(v for v in schema.variables if schema.kinds[v] not in LEVELLED)

    @property
    def unobserved(self) -> dict[str, tuple[str, ...]]:
        """Site -> the features it does not observe (sites that observe every one left
        out): FedAvg imputes them there from the other sites' federated statistics,
        with their missing indicator on (:mod:`fedstruct.fl.features`)."""
        schema = self.sites.schema
        found = {site: schema.unobserved(site) for site in schema.sites}
        return {site: columns for site, columns in found.items() if columns}

    @property
    def missing_values(self) -> bool:
        """Whether the sites' rows may miss values: they keep theirs
        (``missing=keep``), or a site does not observe a feature."""
        return self.sites.view.options.missing == "keep" or bool(self.unobserved)

    def clients(self) -> Sequence[ClientData]:
        """Every site's rows read here, a feature the site does not observe added as
        missing at every row (:func:`~fedstruct.data.sites.unobserved_as_missing`)."""
        variables = self.sites.schema.variables
        return [unobserved_as_missing(c, self.sites.schema, variables) for c in super().clients()]


def _check_every_site_observes(schema: FederationSchema, target: str) -> None:
    """Every site must observe the target: a site without a label trains nothing.

    Raises
    ------
    DataError
        Naming the first site that does not observe it, and the fix.
    """
    for site in schema.sites:
        if target in schema.unobserved(site):
            raise DataError(
                f"site {site!r} does not observe the target {target!r} (its file lacks it or "
                "misses it at every row): FedAvg trains on labelled rows and that site has "
                "none; give its rows their labels, or leave the site out of the run"
            )
