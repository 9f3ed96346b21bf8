"""A run's data, resolved once: the :class:`Source` every method's run receives.

A run's data come from one of three places, decided once per run, here:

- **the paper's protocol** of the method's run (a network sampled with the run's
  seed, a concept data set, CIFAR-10 split by a Dirichlet draw): the method's own
  :class:`Source`, built from the settings;
- **the user's site files** (``--site``/``--sites``): :class:`SiteFiles`, the files
  read in the method's :class:`~fedstruct.data.formats.SiteFormat` (tables or images)
  with the method's column roles, once, when first asked for, wrapped by the method's
  source that names the method's roles (FedAvg's target, F-CMs' concepts and task);
- **a deployed process's view of sites whose files stay on their own SuperNodes**
  (``--node-site``): the same :class:`SiteFiles` over a :class:`SiteView` that holds
  only the node's own file (:func:`node_view`) or, on the ServerApp, no file, the
  federation schema and what every node reported (:func:`server_view`).

:func:`site_view` reads what the settings say of the files (the manifest, once) without
reading any file; :meth:`~fedstruct.runs.contract.Runnable.resolve` hands the view
(``None`` for built-in data) to the method's ``source(settings, view)``. Nothing is kept
between runs: a source lives as long as its run.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from fedstruct.data.client import ClientData, ClientsOnDemand
from fedstruct.data.formats import SiteFormat, SiteOptions
from fedstruct.data.graph_files import read_graph_file
from fedstruct.data.sites import (
    LEVELLED,
    Manifest,
    SiteFederation,
    SiteSpec,
    read_manifest,
    unobserved_as_missing,
)
from fedstruct.errors import ConfigError, DataError, ProtocolError, UnknownVariableError
from fedstruct.graphs import Graph
from fedstruct.runs.site_args import parse_site_args
from fedstruct.runs.sites import file_metrics, site_options

__all__ = [
    "OnSites",
    "SiteFiles",
    "SiteView",
    "Source",
    "checked_clients",
    "node_view",
    "server_view",
    "site_view",
]


class Source(ABC):
    """A run's data (module docstring): the clients' names, the clients when asked
    for, the truth to score against, and, on a user's files, the files read.

    A method's source adds what its method needs (FedAvg's target and levels, FED-CD's
    regime, CAFE's test images). Built-in sources leave :attr:`sites` ``None``.
    """

    #: The clients' names, in order (known without building any client).
    names: tuple[str, ...] = ()
    #: The user's site files, or ``None`` for the paper's protocol.
    sites: SiteFiles | None = None

    @abstractmethod
    def clients(self) -> Sequence[ClientData]:
        """Every client's data in :attr:`names`' order; built when read where the
        source can (:class:`~fedstruct.data.ClientsOnDemand`), so that a deployed node
        builds only its own. On a deployment's server: none."""

    @property
    def truth(self) -> Graph | None:
        """The graph a learned graph is scored against, or ``None``."""
        return None

    def report(self) -> dict[str, float]:
        """What the run says of its data in metrics.json (rows per site, rows dropped,
        constant columns on a user's tables; nothing for built-in data)."""
        return {} if self.sites is None else self.sites.report()

    def column_kinds(self) -> dict[str, str]:
        """Each column's kind on a user's tables (column -> categorical, ordinal or
        continuous); empty for built-in data and images."""
        return {} if self.sites is None else self.sites.column_kinds()

    def inputs(self) -> dict[str, Any] | None:
        """What a model learned from this source reads, saved with it (a user's files
        only: variables, kinds and level names, or image shape and class names)."""
        return None if self.sites is None else self.sites.inputs()

    def levels(self) -> dict[str, int] | None:
        """Each categorical or ordinal variable's number of levels, where the run knows
        them before any client answers (a user's tables: the federation schema's; a
        method's source says its own), else ``None``."""
        if self.sites is None:
            return None
        cardinalities = getattr(self.sites.schema, "cardinalities", None)
        return None if cardinalities is None else dict(cardinalities())

    def graph_variables(self) -> tuple[str, ...]:
        """The variables a learned graph is over, which a knowledge file may name: the
        sites' columns on a user's files, else the truth's variables (a method's source
        whose graph covers fewer, e.g. without latent variables, says its own)."""
        if self.sites is not None:
            return tuple(self.sites.schema.variables)
        truth = self.truth
        return () if truth is None else tuple(truth.names)


@dataclass(frozen=True)
class SiteView:
    """What one process knows of a run's site files, before reading any.

    Parameters
    ----------
    names
        Every site of the run, in client order.
    here
        The sites whose files this process reads: every site in one process, a
        SuperNode's own on a deployment, none on its ServerApp.
    options
        How every file is read (kinds, missing values, disclosure limits).
    roles
        The manifest's top-level options (method roles such as ``target``, ``task``,
        ``regime``; ``truth``), empty without a manifest.
    truth
        The graph file to score against (``--truth`` over the manifest's), if any.
    schema
        On a deployment: the federation schema the handshake merged; ``None``: merged
        here from the files read.
    reports
        On a deployment's ServerApp: site -> what its node reported after encoding
        its file (``dropped_rows``, ``constant`` for tables).
    """

    names: tuple[str, ...]
    here: tuple[SiteSpec, ...]
    options: SiteOptions
    roles: Mapping[str, Any] = field(default_factory=dict)
    truth: str | None = None
    schema: Mapping[str, Any] | None = None
    reports: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def graphs(self) -> dict[str, str]:
        """Site -> its own graph file (``graph:`` in the manifest, ``--graph`` of a
        node), for the sites read here that have one."""
        return {s.name: str(s.options["graph"]) for s in self.here if s.options.get("graph")}


def site_view(settings: Any) -> SiteView | None:
    """The site files ``settings`` name (``--site`` or ``--sites``), read by this one
    process; ``None`` when the run uses the method's built-in data.

    Raises
    ------
    ConfigError
        If a manifest or a site argument is malformed, or the settings name sites kept
        on their own nodes (``--node-site``) outside a deployment.
    """
    if settings.node_sites:
        raise ConfigError(
            "--node-site names sites whose files stay on their own SuperNodes: run with "
            "--backend flower, each site's node started with 'fedstruct flower supernode "
            "--data FILE --name SITE'"
        )
    if settings.manifest:
        manifest = read_manifest(settings.manifest)
    elif settings.sites:
        manifest = Manifest(parse_site_args(settings.sites))
    else:
        return None
    roles = dict(manifest.options)
    return SiteView(
        names=tuple(spec.name for spec in manifest.sites),
        here=manifest.sites,
        options=site_options(settings, roles),
        roles=roles,
        truth=settings.truth or roles.get("truth"),
    )


def node_view(settings: Any, spec: SiteSpec, schema: Mapping[str, Any]) -> SiteView:
    """What site ``spec``'s node sees of a deployment: its own file and the federation
    schema of the handshake."""
    return SiteView(
        names=tuple(settings.node_sites),
        here=(spec,),
        options=site_options(settings, {}),
        truth=settings.truth,
        schema=schema,
    )


def server_view(
    settings: Any, schema: Mapping[str, Any], reports: Mapping[str, Mapping[str, Any]]
) -> SiteView:
    """What a deployment's ServerApp sees: the federation schema and every node's
    report, no file."""
    return SiteView(
        names=tuple(settings.node_sites),
        here=(),
        options=site_options(settings, {}),
        truth=settings.truth,
        schema=schema,
        reports=reports,
    )


class SiteFiles(Source):
    """The files of a :class:`SiteView` read in a :class:`SiteFormat` with a method's
    column ``roles`` (``regime``, ``supervised``), once, when first asked for.

    It is a :class:`Source` itself (its :attr:`sites` is itself): a method without
    roles of its own may run on it as it is; a method's source wraps it to add them.

    Parameters
    ----------
    view
        Which files this process reads, and how.
    site_format
        Tables or images (:data:`~fedstruct.data.formats.TABLES`, ``IMAGES``).
    roles
        The reader's column roles; empty ones are not given.
    """

    def __init__(self, view: SiteView, site_format: SiteFormat[Any], roles: Mapping[str, Any]):
        self.view = view
        self.format = site_format
        self.column_roles = {role: value for role, value in roles.items() if value}
        self.sites = self

    @property
    def names(self) -> tuple[str, ...]:
        """Every site's name, in client order."""
        return self.view.names

    @property
    def roles(self) -> Mapping[str, Any]:
        """The manifest's method roles (``target``, ``task``, ...): empty without one."""
        return self.view.roles

    @cached_property
    def read(self) -> Any:
        """The files read here, encoded with one codebook (the deployment's, or merged
        from them); on a deployment's ServerApp, the schema and the nodes' reports."""
        here = Manifest(self.view.here)
        read = self.format.read(here, self.view.options, self.column_roles, self.view.schema)
        if self.view.reports and isinstance(read, SiteFederation):
            reports = self.view.reports
            read = dataclasses.replace(
                read,
                dropped_rows={site: int(r.get("dropped_rows", 0)) for site, r in reports.items()},
                constant={site: tuple(r.get("constant", ())) for site, r in reports.items()},
            )
        return read

    @property
    def schema(self) -> Any:
        """The federation schema (tables: variables, kinds and levels; images: shape
        and classes)."""
        return self.read.schema

    def clients(self) -> list[ClientData]:
        """The clients of the files read here (none on a deployment's ServerApp)."""
        return list(self.read.clients)

    def own_report(self) -> dict[str, Any]:
        """What a deployed node tells the server of its encoded file.

        Raises
        ------
        ProtocolError
            If this process read other than one site.
        """
        names = [client.name for client in self.read.clients]
        if len(names) != 1:
            raise ProtocolError(f"a node reports on its own site only; it read {names}")
        return self.format.report(self.read, names[0])

    def report(self) -> dict[str, float]:
        """Rows per site, rows dropped for missing values and constant columns
        (tables: :func:`~fedstruct.runs.sites.file_metrics`); images: none."""
        return file_metrics(self.read) if isinstance(self.read, SiteFederation) else {}

    def column_kinds(self) -> dict[str, str]:
        """Each column's kind (tables: the schema's; images: none)."""
        kinds = getattr(self.schema, "kinds", None)
        return dict(kinds) if isinstance(kinds, Mapping) else {}

    def inputs(self) -> dict[str, Any]:
        """What a model learned from these files reads (saved with it)."""
        return self.format.inputs(self.read)

    @cached_property
    def truth(self) -> Graph | None:
        """The graph of ``--truth`` (graph.json, DOT, GraphML or BIF), checked to name
        only the sites' variables, or ``None``.

        Raises
        ------
        UnknownVariableError
            Naming the graph's variables no site has, and the sites' variables.
        """
        path = self.view.truth
        if not path:
            return None
        truth = read_graph_file(Path(path))
        variables = self.schema.variables
        unknown = [v for v in truth.names if v not in variables]
        if unknown:
            raise UnknownVariableError(
                f"--truth {path} names variables no site has: {_listed(unknown)}; the sites' "
                f"variables are {_listed(variables)}: give a graph over these names"
            )
        return truth

    def role(self, settings_value: Any, name: str, default: Any = None) -> Any:
        """A method role: the setting's value when given, else the manifest's ``name``,
        else ``default``."""
        return settings_value or self.roles.get(name, default)


class OnSites(Source):
    """A method's source over the user's site files: their names, clients and truth;
    the method adds its roles (FedAvg's target, F-CMs' concepts and task, ...).

    Parameters
    ----------
    settings
        The run's settings.
    sites
        The files as the method reads them.
    """

    def __init__(self, settings: Any, sites: SiteFiles):
        self.settings = settings
        self.sites = sites
        self.names = sites.names

    def clients(self) -> Sequence[ClientData]:
        """Every site's rows read here (a deployed node: its own; its server: none)."""
        return self.sites.clients()

    @property
    def truth(self) -> Graph | None:
        """The graph of ``--truth``, checked against the sites' columns, or ``None``."""
        return self.sites.truth


class TableTask(OnSites):
    """A user's table sites with one column to predict, whose model reads every other
    column at every site (FedAvg, CAFE on a table): categorical and ordinal columns
    one-hot, continuous ones standardised and missing values imputed from federated
    statistics (:mod:`fedstruct.fl.features`). A feature a site does not observe (its
    file lacks it, or misses it at every row) is missing at every row there: imputed
    from the other sites' statistics, its missing indicator on (:attr:`unobserved`).
    """

    def checked_target(self, method: str, regression: bool) -> str:
        """The column to predict (the ``target`` setting, else the manifest's), checked.

        Parameters
        ----------
        method
            The method's name, for the messages.
        regression
            Whether a continuous target is a regression (FedAvg); the message on a
            single-level target then suggests it. A method that needs a class refuses
            a continuous target itself.

        Raises
        ------
        ConfigError
            If no target is named.
        UnknownVariableError
            If the target is not a column of the sites.
        DataError
            If a site does not observe the target (it has no labelled row), or the
            target has a single level at every site.
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
        for site in schema.sites:
            if target in schema.unobserved(site):
                raise DataError(
                    f"site {site!r} does not observe the target {target!r} (its file lacks "
                    f"it or misses it at every row): {method} trains on labelled rows and "
                    "that site has none; give its rows their labels, or leave the site out "
                    "of the run"
                )
        levels = schema.levels.get(target)
        if levels is not None and len(levels) < 2:
            fix = "pick another target" + (
                f", or set kinds.{target}=continuous if its values are numbers to regress on"
                if regression
                else ""
            )
            raise DataError(
                f"target {target!r} has the single level {levels[0]!r} at every site; a "
                f"classifier needs two or more: {fix}"
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
        out): imputed there from the other sites' federated statistics, with their
        missing indicator on."""
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


def _listed(names: Sequence[str], limit: int = 10) -> str:
    shown = ", ".join(repr(n) for n in list(names)[:limit])
    return f"[{shown}{', ...' if len(names) > limit else ''}]"


def checked_clients(source: Source) -> Sequence[ClientData]:
    """``source.clients()``, checked to be the clients :attr:`Source.names` says, in
    order (those built on demand are not built to check them).

    Raises
    ------
    DataError
        If they are not.
    """
    clients = source.clients()
    found = (
        list(clients.names)
        if isinstance(clients, ClientsOnDemand)
        else [client.name for client in clients]
    )
    if found != list(source.names):
        raise DataError(f"the source's clients are {found}, expected {list(source.names)}")
    return clients
